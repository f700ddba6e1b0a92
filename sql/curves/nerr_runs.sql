-- nerr_runs.sql: each rank of positive gain with the chances around it that cwl_eval's NERR8
-- and NERR9 (normalised ERR, Moffat's C/W/L equations 8 and 9) read.
--
-- Reads: view cwl_gains (sql/curves/cwl_gains.sql: the ranks of positive gain).
--
-- Variables:
--   SET VARIABLE curves = ['nerr_curve'];  -- the curves the asked measures read (the registry's)
--
-- Creates: view nerr_runs (query_id, rank, gain, reach, reach_past, next_rank), one row per
-- rank i <= 1000 (cwl_eval's depth) of positive gain when `curves` names nerr_curve (else no
-- row): gain(i) as sql/curves/cwl_gains.sql reads it; reach, the chance of no stop
-- above it, (1 - gain) over the ranks of positive gain above it multiplied in rank order;
-- reach_past, the same with its own; next_rank, the next rank of positive gain (none: null).

create or replace temp view nerr_runs as
with

gains as (
    select cwl_gains.*
    from cwl_gains
    where list_contains(getvariable('curves'), 'nerr_curve')
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
