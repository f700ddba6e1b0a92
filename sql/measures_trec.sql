-- measures_trec.sql: trec_eval's counts and measures of the retrieved set, one formula each.
--
-- Step 15 of the per-query table. Reads: view counted (sql/counted.sql).
--
-- Variables:
--   SET VARIABLE measures = ['num_ret', 'set_P'];   -- the families asked for
--   SET VARIABLE ap_denominator = 'relevant';       -- AP@k / R; or 'min-k-relevant': / min(k, R)
--
-- Creates: view measures_trec (the columns of counted, then num_q, num_ret, num_rel,
-- num_rel_ret, num_nonrel_judged_ret, gm_map, relative_P, set_P, set_relative_P, set_recall,
-- set_map, set_F, utility, unj, judged), pipeline/registry/'s formulas, from the counters
-- <signal>_<accumulation> (retrieved_in_ranking: n, the results retrieved; min(k, n) of
-- them at cutoff k); each null unless `measures` names it. A set measure at cutoff k is of
-- the top k. Also ap_divisor, what AP@k divides by (read by sql/measures.sql too).

create or replace temp view measures_trec as
with

-- the counters each formula reads, nulls (nothing at or above k) as 0
counts as (
    select
        counted.*,
        coalesce(counted.relevant_found, 0) as rel_ret,
        coalesce(counted.relevant_in_qrels, 0) as rel,
        least(coalesce(counted.k, counted.retrieved_in_ranking), coalesce(counted.retrieved_in_ranking, 0)) as ret,
        -- R, or min(k, R) (R over the whole ranking, k null)
        case
            when getvariable('ap_denominator') = 'min-k-relevant' and counted.k is not null
                then least(counted.k, coalesce(counted.relevant_in_qrels, 0))
            else coalesce(counted.relevant_in_qrels, 0)
        end as ap_divisor
    from counted
),

final as (
    select
        c.* exclude (rel_ret, rel, ret),  -- noqa: RF02, RF03
        case when list_contains(getvariable('measures'), 'num_q') then cast(1 as double) end as num_q,
        case when list_contains(getvariable('measures'), 'num_ret') then cast(c.ret as double) end as num_ret,
        case when list_contains(getvariable('measures'), 'num_rel') then cast(c.rel as double) end as num_rel,
        case when list_contains(getvariable('measures'), 'num_rel_ret') then cast(c.rel_ret as double) end
            as num_rel_ret,
        case
            when list_contains(getvariable('measures'), 'num_nonrel_judged_ret')
                then cast(coalesce(c.nonrelevant_found, 0) as double)
        end as num_nonrel_judged_ret,
        case
            when list_contains(getvariable('measures'), 'gm_map')
                then coalesce(c.relevant_precision_sum / nullif(c.ap_divisor, 0), 0.0)
        end as gm_map,
        case
            -- null over the whole ranking (k null), which least() would skip
            when list_contains(getvariable('measures'), 'relative_P') and c.k is not null
                then coalesce(c.rel_ret / nullif(least(c.k, c.rel), 0), 0.0)
        end as "relative_P",
        case when list_contains(getvariable('measures'), 'set_P') then coalesce(c.rel_ret / nullif(c.ret, 0), 0.0) end
            as "set_P",
        case
            when list_contains(getvariable('measures'), 'set_relative_P')
                then coalesce(c.rel_ret / nullif(least(c.ret, c.rel), 0), 0.0)
        end as "set_relative_P",
        case
            when list_contains(getvariable('measures'), 'set_recall') then coalesce(c.rel_ret / nullif(c.rel, 0), 0.0)
        end as set_recall,
        case
            when list_contains(getvariable('measures'), 'set_map')
                then coalesce(c.rel_ret * c.rel_ret / nullif(c.ret * c.rel, 0), 0.0)
        end as set_map,
        case
            when list_contains(getvariable('measures'), 'set_F')
                then coalesce(2.0 * c.rel_ret / nullif(c.ret + c.rel, 0), 0.0)
        end as "set_F",
        case when list_contains(getvariable('measures'), 'utility') then cast(2 * c.rel_ret - c.ret as double) end
            as utility,
        -- the whole ranking has none (k null): a fraction of the top k
        case
            when list_contains(getvariable('measures'), 'unj') then (c.ret - coalesce(c.judged_found, 0)) / c.k
        end as unj,
        case when list_contains(getvariable('measures'), 'judged') then coalesce(c.judged_found, 0) / c.k end
            as judged
    from counts as c
)

select * from final;
