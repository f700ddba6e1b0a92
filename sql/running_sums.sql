-- running_sums.sql: CG, DCG and the rank counters of every ranking of a query, at each kept rank.
--
-- Step 8 of the per-query table. Reads: view rankings (sql/rankings.sql).
--
-- Variables:
--   SET VARIABLE discount = 'log2';          -- 1/log2(rank+1); or 'jk': 1/max(1, log_b(rank))
--   SET VARIABLE log_base = 2;               -- b of the 'jk' discount
--   SET VARIABLE signals = ['relevant'];     -- the signals counted; unset: every signal
--
-- Creates: view running_sums (ranking, query_id, rank, next_rank, cg, dcg, then
-- <signal>_<accumulation> for each signal and rank accumulation of pipeline/registry/): the sums
-- and counts of the ranks up to this one; of a signal, found (the ranks where it holds),
-- first_rank (the first of them), precision_sum (found_i / i summed over them), or null when
-- `signals` leaves it out.

create or replace temp view running_sums as
with

-- Running sums in rank order: the same bits on every run, which a parallel sum() in
-- arbitrary row order does not give. next_rank says up to which cutoff each sum holds. The
-- counters of a signal not counted are a constant null, which the optimizer drops.
cumulative as (
    select
        d.ranking, d.query_id, d.rank, d.relevant, d.judged, d.nonrelevant, d.pooled,
        lead(d.rank) over in_rank_order as next_rank,
        sum(d.credited_gain) over running as cg,
        sum(
            d.credited_gain * case
                when coalesce(getvariable('discount'), 'log2') = 'jk'
                    then 1.0 / greatest(1.0, ln(d.rank) / ln(coalesce(getvariable('log_base'), 2.0)))
                else 1.0 / (ln(d.rank + 1.0) / ln(2.0))
            end
        ) over running as dcg,
        case
            when list_contains(coalesce(getvariable('signals'), ['relevant']), 'relevant')
                then sum(cast(d.relevant as int)) over running
        end as relevant_found,
        case
            when list_contains(coalesce(getvariable('signals'), ['relevant']), 'relevant')
                then min(case when d.relevant then d.rank end) over running
        end as relevant_first_rank,
        case
            when list_contains(coalesce(getvariable('signals'), ['judged']), 'judged')
                then sum(cast(d.judged as int)) over running
        end as judged_found,
        case
            when list_contains(coalesce(getvariable('signals'), ['judged']), 'judged')
                then min(case when d.judged then d.rank end) over running
        end as judged_first_rank,
        case
            when list_contains(coalesce(getvariable('signals'), ['nonrelevant']), 'nonrelevant')
                then sum(cast(d.nonrelevant as int)) over running
        end as nonrelevant_found,
        case
            when list_contains(coalesce(getvariable('signals'), ['nonrelevant']), 'nonrelevant')
                then min(case when d.nonrelevant then d.rank end) over running
        end as nonrelevant_first_rank,
        case
            when list_contains(coalesce(getvariable('signals'), ['pooled']), 'pooled')
                then sum(cast(d.pooled as int)) over running
        end as pooled_found,
        case
            when list_contains(coalesce(getvariable('signals'), ['pooled']), 'pooled')
                then min(case when d.pooled then d.rank end) over running
        end as pooled_first_rank
    from rankings as d
    window
        in_rank_order as (partition by d.ranking, d.query_id order by d.rank),
        running as (partition by d.ranking, d.query_id order by d.rank rows unbounded preceding)
),

-- found / rank at each rank where a signal holds, summed in rank order (AP's numerator for
-- relevant): a second window over the first, one chain, so Spark plans it once
counted as (
    select
        c.*,
        case
            when list_contains(coalesce(getvariable('signals'), ['relevant']), 'relevant')
                then sum(if(c.relevant, c.relevant_found / c.rank, 0.0)) over running
        end as relevant_precision_sum,
        case
            when list_contains(coalesce(getvariable('signals'), ['judged']), 'judged')
                then sum(if(c.judged, c.judged_found / c.rank, 0.0)) over running
        end as judged_precision_sum,
        case
            when list_contains(coalesce(getvariable('signals'), ['nonrelevant']), 'nonrelevant')
                then sum(if(c.nonrelevant, c.nonrelevant_found / c.rank, 0.0)) over running
        end as nonrelevant_precision_sum,
        case
            when list_contains(coalesce(getvariable('signals'), ['pooled']), 'pooled')
                then sum(if(c.pooled, c.pooled_found / c.rank, 0.0)) over running
        end as pooled_precision_sum
    from cumulative as c
    window running as (partition by c.ranking, c.query_id order by c.rank rows unbounded preceding)
)

select counted.* exclude (counted.relevant, counted.judged, counted.nonrelevant, counted.pooled)  -- noqa: RF02
from counted;
