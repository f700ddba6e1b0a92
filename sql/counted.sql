-- counted.sql: every evaluated query at each ordering and cutoff, with the counters its
-- measures read.
--
-- Step 14 of the per-query table. Reads: views evaluated_queries, relevance_curve, gain_curve,
-- cutoffs and sums_at_cutoffs.
--
-- Variables:
--   SET VARIABLE tie_bounds = true;          -- also the orderings 'worst' and 'best'
--
-- Creates: view counted (ordering, query_id, k, then the sums and rank counters of
-- sums_at_cutoffs, idcg, and the per-query counters of evaluated_queries, relevance_curve and
-- gain_curve (null where they have no row)): ordering is
-- 'retrieved' (with tie_bounds also 'worst', 'best'); a sum or rank counter is null where
-- nothing at or above k earns or is counted; idcg is the ideal ranking's dcg.

create or replace temp view counted as
with

-- read twice below (the run's sums and the ideal's): one CTE, computed once
sums as (
    select * from sums_at_cutoffs
),

orderings as (
    select 'retrieved' as ordering
    union all
    select 'worst' as ordering
    where coalesce(getvariable('tie_bounds'), false)
    union all
    select 'best' as ordering
    where coalesce(getvariable('tie_bounds'), false)
),

final as (
    select
        orderings.ordering,
        evaluated_queries.query_id,
        cutoffs.k,
        ranked.* exclude (ranking, query_id, k),  -- noqa: RF02
        ideal.dcg as idcg,
        evaluated_queries.* exclude (query_id),  -- noqa: RF02
        relevance_curve.* exclude (query_id),  -- noqa: RF02
        gain_curve.* exclude (query_id)  -- noqa: RF02
    from evaluated_queries
    left join relevance_curve on evaluated_queries.query_id = relevance_curve.query_id
    left join gain_curve on evaluated_queries.query_id = gain_curve.query_id
    cross join cutoffs
    cross join orderings
    left join sums as ranked
        on orderings.ordering = ranked.ranking
        and evaluated_queries.query_id = ranked.query_id
        and cutoffs.k is not distinct from ranked.k
    left join sums as ideal
        on ideal.ranking = 'ideal'
        and evaluated_queries.query_id = ideal.query_id
        and cutoffs.k is not distinct from ideal.k
)

select * from final;
