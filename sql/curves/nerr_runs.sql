-- nerr_runs.sql: each rank of positive gain with the chances around it that cwl_eval's NERR8
-- and NERR9 (normalised ERR, Moffat's C/W/L equations 8 and 9) read.
--
-- Reads: views signals (sql/counters/signals.sql: the ranks with the signal judged, each with
-- its label).
--
-- Variables:
--   SET VARIABLE curves = ['nerr_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE cwl_min_rel = 0;          -- the scale's lowest label (unset: 0, ir_measures')
--   SET VARIABLE cwl_max_rel = 3;          -- the scale's highest label (unset: 4)
--
-- Creates: view nerr_runs (query_id, rank, gain, reach, reach_past, next_rank), one row per
-- rank i <= 1000 (cwl_eval's depth) of positive gain when `curves` names nerr_curve (else no
-- row): gain(i) as sql/curves/user_model_curve.sql reads it; reach, the chance of no stop
-- above it, (1 - gain) over the ranks of positive gain above it multiplied in rank order;
-- reach_past, the same with its own; next_rank, the next rank of positive gain (none: null).

create or replace temp view nerr_runs as
with

scale as (
    select
        coalesce(getvariable('cwl_min_rel'), 0.0) as low,
        coalesce(getvariable('cwl_max_rel'), 4.0) as high
),

gains as (
    select
        s.query_id,
        s.rank,
        (least(s.label, scale.high) - scale.low) / (scale.high - scale.low) as gain
    from signals as s
    cross join scale
    where
        s.source = 'ranking'
        and s.ranking = 'retrieved'
        and s.rank <= 1000
        and s.label > scale.low
        and list_contains(getvariable('curves'), 'nerr_curve')
),

-- the chance of no stop above each rank of positive gain, and of none at or above it
reached as (
    select
        gains.*,
        coalesce(
            product(1.0 - gains.gain) over (
                partition by gains.query_id order by gains.rank asc rows between unbounded preceding and 1 preceding
            ),
            1.0
        ) as reach,
        product(1.0 - gains.gain) over (
            partition by gains.query_id order by gains.rank asc rows between unbounded preceding and current row
        ) as reach_past,
        lead(gains.rank) over (partition by gains.query_id order by gains.rank asc) as next_rank
    from gains
)

select * from reached;
