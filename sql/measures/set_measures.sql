-- set_measures.sql: trec_eval's counts and measures of the retrieved set, one formula each.
--
-- Reads: view counted (sql/measures/counted.sql).
--
-- Variables:
--   SET VARIABLE measures = ['num_ret', 'set_P'];   -- the families asked for
--
-- Creates: view set_measures (the columns of counted, then num_q, num_ret, num_rel,
-- num_rel_ret, num_nonrel_judged_ret, set_P, set_relative_P, set_recall, set_map, set_F,
-- utility), the registry's formulas, from the counters <signal>_<accumulation>
-- (retrieved_in_ranking: n, the results retrieved; min(k, n) of them at cutoff k); each null
-- unless `measures` names it. A set measure at cutoff k is of the top k.

create or replace temp view set_measures as
with

-- the counters each formula reads, nulls (nothing at or above k) as 0
counts as (
    select
        counted.*,
        coalesce(counted.relevant_found, 0) as rel_ret,
        coalesce(counted.relevant_in_qrels, 0) as rel,
        least(coalesce(counted.k, counted.retrieved_in_ranking), coalesce(counted.retrieved_in_ranking, 0)) as ret
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
            when list_contains(getvariable('measures'), 'set_P')
                then coalesce(cast(c.rel_ret as double) / nullif(c.ret, 0), 0.0)
        end as "set_P",
        case
            when list_contains(getvariable('measures'), 'set_relative_P')
                then coalesce(cast(c.rel_ret as double) / nullif(least(c.ret, c.rel), 0), 0.0)
        end as "set_relative_P",
        case
            when list_contains(getvariable('measures'), 'set_recall')
                then coalesce(cast(c.rel_ret as double) / nullif(c.rel, 0), 0.0)
        end as set_recall,
        case
            when list_contains(getvariable('measures'), 'set_map')
                then coalesce(cast(c.rel_ret * c.rel_ret as double) / nullif(c.ret * c.rel, 0), 0.0)
        end as set_map,
        case
            when list_contains(getvariable('measures'), 'set_F')
                then coalesce(2.0 * c.rel_ret / nullif(c.ret + c.rel, 0), 0.0)
        end as "set_F",
        case when list_contains(getvariable('measures'), 'utility') then cast(2 * c.rel_ret - c.ret as double) end
            as utility
    from counts as c
)

select * from final;
