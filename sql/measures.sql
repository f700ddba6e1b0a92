-- measures.sql: every measure of every evaluated query, ordering and cutoff, one formula each.
--
-- Step 10 of the per-query table (conventions 4 and 5 of sql/per_query.sql), the only one
-- naming a measure. Reads: views judgments, run, cutoffs, sums_at_cutoffs and query_totals.
--
-- Variables:
--   SET VARIABLE all_queries = false;        -- true: qrels queries missing from the run score 0
--   SET VARIABLE empty_ideal = 'zero';       -- IDCG 0 scores 0; or 'one', 'nan', 'skip' (null)
--   SET VARIABLE tie_bounds = true;          -- also the orderings 'worst' and 'best'
--   SET VARIABLE measures = ['ndcg', 'P', 'recall', 'map', 'recip_rank', 'success'];
--
-- Creates: view measures (ordering, query_id, k, cg, dcg, idcg, ndcg, P, recall, map,
-- recip_rank, success): one row per evaluated query, cutoff and ordering ('retrieved', and
-- with tie_bounds 'worst' and 'best'). NDCG from the sums of the ranking and of the ideal;
-- the others (pipeline/spec.py's formulas) from the counters <signal>_<accumulation> of
-- sql/sums_at_cutoffs.sql (null where no rank at or above k was kept: none found) and
-- sql/query_totals.sql, only when `measures` names them and of 'retrieved', else null.

create or replace temp view measures as
with

-- read twice below (the run's sums and the ideal's): one CTE, computed once
sums as (
    select * from sums_at_cutoffs
),

-- the judged queries the run has, or with all_queries every judged query
evaluated_queries as (
    select judged_queries.query_id
    from (select distinct judgments.query_id from judgments) as judged_queries
    where
        coalesce(getvariable('all_queries'), false)
        or judged_queries.query_id in (select distinct run.query_id from run)
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

-- a query, ordering and cutoff with its sums and counters (null where nothing at or above k
-- earns or is counted), its idcg, and of 'retrieved' its per-query counters
counted as (
    select
        orderings.ordering,
        evaluated_queries.query_id,
        cutoffs.k,
        ranked.* exclude (ranking, query_id, k),  -- noqa: RF02
        ideal.dcg as idcg,
        query_totals.* exclude (query_id)  -- noqa: RF02
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
    left join query_totals
        on orderings.ordering = 'retrieved' and evaluated_queries.query_id = query_totals.query_id
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
        -- each only when asked for, and of 'retrieved' (the counters are of the ranking by score)
        case when list_contains(getvariable('measures'), 'P') and c.ordering = 'retrieved'
                then coalesce(c.relevant_found, 0) / c.k end as "P",
        case when list_contains(getvariable('measures'), 'recall') and c.ordering = 'retrieved'
                then coalesce(c.relevant_found / nullif(c.relevant_in_qrels, 0), 0.0) end as recall,
        case when list_contains(getvariable('measures'), 'map') and c.ordering = 'retrieved'
                then coalesce(c.relevant_precision_sum / nullif(c.relevant_in_qrels, 0), 0.0) end as map,
        case when list_contains(getvariable('measures'), 'recip_rank') and c.ordering = 'retrieved'
                then if(c.relevant_found > 0, 1.0 / c.relevant_first_rank, 0.0) end as recip_rank,
        case when list_contains(getvariable('measures'), 'success') and c.ordering = 'retrieved'
                then if(c.relevant_found > 0, 1.0, 0.0) end as success
    from counted as c
)

select * from final;
