-- nerr_curve.sql: per query and cutoff, cwl_eval's NERR8 and NERR9 (normalised ERR, Moffat's
-- C/W/L equations 8 and 9), ir_measures' NERR8@k and NERR9@k.
--
-- Reads: views nerr_runs (sql/curves/nerr_runs.sql) and cutoffs (sql/ranking/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE curves = ['nerr_curve'];  -- the curves the asked measures read (the registry's)
--
-- Creates: view nerr_curve (query_id, k, nerr8_value, nerr9_value), one row per query with a
-- rank of positive gain and cutoff k (not the whole ranking) when `curves` names it (else no
-- row). The reader reaches rank i with P(i) = w(i) * (1 - gain(1)) * ... * (1 - gain(i - 1)),
-- w(i) = 1 (NERR8) or 1 / i (NERR9), for i <= K = min(k, 1000), and NERRx@k = the sum over
-- i <= K of P(i) * gain(i) over the sum of P(i). The ranks between two of positive gain share
-- one chance: the denominator sums over those runs the chance times the run's weights (n for
-- w = 1, H(n) for w = 1 / i, by prefix sums). Every sum runs in rank order.

create or replace temp view nerr_curve as
with

-- the runs (after_rank, until_rank] read with one chance: up to the first rank of positive gain
-- with 1, then after each up to the next (none: to the end)
runs as (
    select
        nerr_runs.query_id,
        0 as after_rank,
        1.0 as chance,
        min(nerr_runs.rank) as until_rank
    from nerr_runs
    group by nerr_runs.query_id
    union all
    select
        nerr_runs.query_id,
        nerr_runs.rank as after_rank,
        nerr_runs.reach_past as chance,
        nerr_runs.next_rank as until_rank
    from nerr_runs
),

-- H(n), the sum of 1 / i for i <= n, in rank order; H(0) = 0. Each unnest alone in its own
-- select: Spark allows no generator inside an expression
positions as (
    select unnest(range(1, 1001)) as i
),

harmonic as (
    select
        positions.i,
        sum(1.0 / positions.i) over (order by positions.i asc rows between unbounded preceding and current row) as h
    from positions
    union all
    select
        0 as i,
        0.0 as h
),

depths as (
    select
        cutoffs.k,
        least(cutoffs.k, 1000) as last_rank
    from cutoffs
    where cutoffs.k is not null and list_contains(getvariable('curves'), 'nerr_curve')
),

numerators as (
    select
        nerr_runs.query_id,
        depths.k,
        sum(nerr_runs.reach * nerr_runs.gain order by nerr_runs.rank asc) as nerr8_sum,
        sum(nerr_runs.reach * nerr_runs.gain / nerr_runs.rank order by nerr_runs.rank asc) as nerr9_sum
    from nerr_runs
    inner join depths on nerr_runs.rank <= depths.last_rank
    group by nerr_runs.query_id, depths.k
),

denominators as (
    select
        runs.query_id,
        depths.k,
        sum(runs.chance * (run_ends.i - run_starts.i) order by runs.after_rank asc) as nerr8_norm,
        sum(runs.chance * (run_ends.h - run_starts.h) order by runs.after_rank asc) as nerr9_norm
    from runs
    inner join depths on runs.after_rank < depths.last_rank
    inner join harmonic as run_ends on least(coalesce(runs.until_rank, depths.last_rank), depths.last_rank) = run_ends.i
    inner join harmonic as run_starts on runs.after_rank = run_starts.i
    group by runs.query_id, depths.k
),

final as (
    select
        d.query_id,
        d.k,
        coalesce(n.nerr8_sum, 0.0) / d.nerr8_norm as nerr8_value,
        coalesce(n.nerr9_sum, 0.0) / d.nerr9_norm as nerr9_value
    from denominators as d
    left join numerators as n on d.query_id = n.query_id and d.k = n.k
)

select * from final;
