-- name: stock_day_signals
-- stage: loop
-- partitioned: daily
-- decision_time: true
-- sort_by: variant, ticker, horizon
-- description: Stock-day signal per variant, ticker, decision day and horizon = mean of the anchors' reader signals (seed 000 §3.1), with the mean static relevance of their contexts (the portfolio's tie-break). Sums are exact (DECIMAL) so the bytes do not depend on aggregation order.
-- columns: variant VARCHAR NOT NULL, ticker VARCHAR NOT NULL, horizon VARCHAR NOT NULL, signal DOUBLE NOT NULL, n_anchors BIGINT NOT NULL, mean_relevance DOUBLE
WITH outputs AS (
    SELECT variant, date, ticker, horizon, anchor_id, signal
    FROM reader_outputs
    WHERE date BETWEEN $start AND $end
),
relevance AS (
    SELECT variant, date, anchor_id, avg(CAST(relevance AS DECIMAL(38, 18))) AS r
    FROM contexts
    WHERE date BETWEEN $start AND $end
    GROUP BY variant, date, anchor_id
)
SELECT o.variant, o.date, o.ticker, o.horizon,
       CAST(avg(o.signal) AS DOUBLE) AS signal,
       count(*) AS n_anchors,
       CAST(avg(CAST(r.r AS DECIMAL(38, 18))) AS DOUBLE) AS mean_relevance
FROM outputs AS o
LEFT JOIN relevance AS r USING (variant, date, anchor_id)
GROUP BY o.variant, o.date, o.ticker, o.horizon
