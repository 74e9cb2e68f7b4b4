-- name: returns
-- stage: history
-- partitioned: daily
-- sort_by: ticker
-- description: Backward-looking daily and h-day returns (adjusted close) and realised volatility for every ticker and the market proxy, by trading day. Only bars up to and including the row's date are used.
-- columns: ticker VARCHAR NOT NULL, adj_close DOUBLE NOT NULL, ret_1d DOUBLE, ret_3d DOUBLE, ret_5d DOUBLE, ret_10d DOUBLE, ret_20d DOUBLE, vol_20d DOUBLE, vol_252d DOUBLE, n_obs_252d BIGINT NOT NULL
WITH bars AS (
    SELECT p.ticker, p.date, s.session_idx, p.adj_close
    FROM prices AS p
    JOIN trading_sessions AS s ON s.date = p.date
    WHERE p.date <= $end
      AND s.session_idx >= (SELECT min(session_idx) FROM trading_sessions WHERE date >= $start) - 275
),
lagged AS (
    SELECT b.ticker, b.date, b.session_idx, b.adj_close,
           b.adj_close / l1.adj_close - 1 AS ret_1d,
           b.adj_close / l3.adj_close - 1 AS ret_3d,
           b.adj_close / l5.adj_close - 1 AS ret_5d,
           b.adj_close / l10.adj_close - 1 AS ret_10d,
           b.adj_close / l20.adj_close - 1 AS ret_20d
    FROM bars AS b
    LEFT JOIN bars AS l1 ON l1.ticker = b.ticker AND l1.session_idx = b.session_idx - 1
    LEFT JOIN bars AS l3 ON l3.ticker = b.ticker AND l3.session_idx = b.session_idx - 3
    LEFT JOIN bars AS l5 ON l5.ticker = b.ticker AND l5.session_idx = b.session_idx - 5
    LEFT JOIN bars AS l10 ON l10.ticker = b.ticker AND l10.session_idx = b.session_idx - 10
    LEFT JOIN bars AS l20 ON l20.ticker = b.ticker AND l20.session_idx = b.session_idx - 20
),
-- Window sums are taken in DECIMAL, which DuckDB adds exactly: a float window aggregate's
-- rounding depends on how the engine splits the partition (which includes later rows), and
-- the time-travel test caught that in the last bits. Exact sums make each row a function of
-- its own trailing window only.
exact AS (
    SELECT *, CAST(ret_1d AS DECIMAL(38, 18)) AS r, CAST(ret_1d * ret_1d AS DECIMAL(38, 18)) AS r2
    FROM lagged
),
sums AS (
    SELECT *,
        sum(r) OVER w20 AS s1_20, sum(r2) OVER w20 AS s2_20, count(r) OVER w20 AS n_20,
        sum(r) OVER w252 AS s1_252, sum(r2) OVER w252 AS s2_252, count(r) OVER w252 AS n_252
    FROM exact
    WINDOW w20 AS (PARTITION BY ticker ORDER BY session_idx RANGE BETWEEN 19 PRECEDING AND CURRENT ROW),
           w252 AS (PARTITION BY ticker ORDER BY session_idx RANGE BETWEEN 251 PRECEDING AND CURRENT ROW)
)
SELECT ticker, date, adj_close, ret_1d, ret_3d, ret_5d, ret_10d, ret_20d,
    CASE WHEN n_20 > 1 THEN sqrt(greatest(0, (CAST(s2_20 AS DOUBLE) - CAST(s1_20 AS DOUBLE) * CAST(s1_20 AS DOUBLE) / n_20) / (n_20 - 1))) END AS vol_20d,
    CASE WHEN n_252 > 1 THEN sqrt(greatest(0, (CAST(s2_252 AS DOUBLE) - CAST(s1_252 AS DOUBLE) * CAST(s1_252 AS DOUBLE) / n_252) / (n_252 - 1))) END AS vol_252d,
    n_252 AS n_obs_252d
FROM sums
WHERE date BETWEEN $start AND $end
