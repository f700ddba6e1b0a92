-- measures.sql: every measure of every evaluated query, ordering and cutoff, one formula each.
--
-- Step 11 of the per-query table (convention 4 of sql/per_query.sql), the only one naming a
-- measure. Reads: views evaluated_queries, cutoffs and sums_at_cutoffs.
--
-- Variables:
--   SET VARIABLE empty_ideal = 'zero';       -- IDCG 0 scores 0; or 'one', 'nan', 'skip' (null)
--   SET VARIABLE tie_bounds = true;          -- also the orderings 'worst' and 'best'
--   SET VARIABLE measures = ['ndcg', 'P', 'recall', 'map', 'recip_rank', 'success'];
--
-- Creates: view measures (ordering, query_id, k, cg, dcg, idcg, ndcg, P, recall, map,
-- recip_rank, success) of each evaluated query, cutoff and ordering ('retrieved'; with
-- tie_bounds 'worst', 'best'): NDCG from the sums of the ranking and the ideal, the others
-- (pipeline/spec.py's formulas) from the counters <signal>_<accumulation> of sums_at_cutoffs
-- (null where none was kept at or above k) and evaluated_queries; null unless `measures` names them.

create or replace temp view measures as
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

-- an evaluated query with its per-query counters, at each ordering and cutoff with its sums
-- and rank counters (null where nothing at or above k earns or is counted) and its idcg
counted as (
    select
        orderings.ordering,
        evaluated_queries.query_id,
        cutoffs.k,
        ranked.* exclude (ranking, query_id, k),  -- noqa: RF02
        ideal.dcg as idcg,
        evaluated_queries.* exclude (query_id)  -- noqa: RF02
    from evaluated_queries
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
),

final as (
    select
        c.ordering,
        c.query_id,
        c.k,
        coalesce(c.cg, 0.0) as cg,
        coalesce(c.dcg, 0.0) as dcg,
        coalesce(c.idcg, 0.0) as idcg,
        case
            when c.idcg > 0 then coalesce(c.dcg, 0.0) / c.idcg
            when getvariable('empty_ideal') = 'one' then 1.0
            when getvariable('empty_ideal') = 'nan' then cast('NaN' as double)
            when getvariable('empty_ideal') = 'skip' then cast(null as double)
            else 0.0
        end as ndcg,
        -- each only when asked for (sql/per_query.sql reads them of 'retrieved' only)
        case
            when list_contains(getvariable('measures'), 'P')
                then coalesce(c.relevant_found, 0) / c.k
        end as "P",
        case
            when list_contains(getvariable('measures'), 'recall')
                then coalesce(c.relevant_found / nullif(c.relevant_in_qrels, 0), 0.0)
        end as recall,
        case
            when list_contains(getvariable('measures'), 'map')
                then coalesce(c.relevant_precision_sum / nullif(c.relevant_in_qrels, 0), 0.0)
        end as map,
        case
            when list_contains(getvariable('measures'), 'recip_rank')
                then coalesce(1.0 / c.relevant_first_rank, 0.0)
        end as recip_rank,
        case
            when list_contains(getvariable('measures'), 'success')
                then cast(coalesce(c.relevant_found > 0, false) as double)
        end as success
    from counted as c
)

select * from final;
