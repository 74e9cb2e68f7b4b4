-- name: table1_audit
-- stage: evaluation
-- partitioned: none
-- sort_by: split_order
-- description: seed 000 Table 1 audit per split: anchors, anchors per day, active ticker-days, SEC coverage of the candidate pools (share of anchors whose pool holds at least one SEC passage) and the +1/0/-1 label proportions per horizon.
-- columns: split VARCHAR NOT NULL, split_order BIGINT NOT NULL, first_day DATE, last_day DATE, anchors BIGINT NOT NULL, anchors_per_day DOUBLE, active_ticker_days BIGINT NOT NULL, sec_coverage DOUBLE, pos_1d DOUBLE, zero_1d DOUBLE, neg_1d DOUBLE, pos_3d DOUBLE, zero_3d DOUBLE, neg_3d DOUBLE, pos_5d DOUBLE, zero_5d DOUBLE, neg_5d DOUBLE
WITH a AS (
    SELECT s.split, s.split_order, a.date, a.anchor_id, a.ticker
    FROM anchors AS a JOIN splits AS s ON a.date BETWEEN s.first_day AND s.last_day
),
sec AS (
    SELECT DISTINCT anchor_id FROM candidates WHERE source_family = 'sec_filing'
),
lab AS (
    SELECT s.split, l.horizon, l.y
    FROM labels AS l
    JOIN (SELECT DISTINCT date, ticker FROM anchors) AS td ON td.date = l.date AND td.ticker = l.ticker
    JOIN splits AS s ON l.date BETWEEN s.first_day AND s.last_day
    WHERE l.status = 'ok'
),
mix AS (
    SELECT split,
        avg(CASE WHEN horizon = '1D' THEN (y = 1)::INT END) AS pos_1d, avg(CASE WHEN horizon = '1D' THEN (y = 0)::INT END) AS zero_1d, avg(CASE WHEN horizon = '1D' THEN (y = -1)::INT END) AS neg_1d,
        avg(CASE WHEN horizon = '3D' THEN (y = 1)::INT END) AS pos_3d, avg(CASE WHEN horizon = '3D' THEN (y = 0)::INT END) AS zero_3d, avg(CASE WHEN horizon = '3D' THEN (y = -1)::INT END) AS neg_3d,
        avg(CASE WHEN horizon = '5D' THEN (y = 1)::INT END) AS pos_5d, avg(CASE WHEN horizon = '5D' THEN (y = 0)::INT END) AS zero_5d, avg(CASE WHEN horizon = '5D' THEN (y = -1)::INT END) AS neg_5d
    FROM lab GROUP BY split
)
SELECT s.split, s.split_order, min(a.date) AS first_day, max(a.date) AS last_day,
       count(a.anchor_id) AS anchors,
       count(a.anchor_id) / nullif(count(DISTINCT a.date), 0) AS anchors_per_day,
       count(DISTINCT (a.date, a.ticker)) AS active_ticker_days,
       avg(CASE WHEN sec.anchor_id IS NOT NULL THEN 1.0 ELSE 0.0 END) AS sec_coverage,
       any_value(m.pos_1d) AS pos_1d, any_value(m.zero_1d) AS zero_1d, any_value(m.neg_1d) AS neg_1d,
       any_value(m.pos_3d) AS pos_3d, any_value(m.zero_3d) AS zero_3d, any_value(m.neg_3d) AS neg_3d,
       any_value(m.pos_5d) AS pos_5d, any_value(m.zero_5d) AS zero_5d, any_value(m.neg_5d) AS neg_5d
FROM splits AS s
LEFT JOIN a ON a.split = s.split
LEFT JOIN sec ON sec.anchor_id = a.anchor_id
LEFT JOIN mix AS m ON m.split = s.split
GROUP BY s.split, s.split_order
