-- scored.sql: CG, DCG, IDCG, NDCG and the companions of every evaluated query, ordering, cutoff.
--
-- Step 10 of the per-query table (conventions 4 and 5 of sql/per_query.sql).
-- Reads: views judgments (sql/judgments.sql), run (sql/inputs.sql), cutoffs
-- (sql/cutoffs.sql), companions (sql/companions.sql) and sums_at_cutoffs.
--
-- Variables:
--   SET VARIABLE all_queries = false;        -- true: qrels queries missing from the run score 0
--   SET VARIABLE empty_ideal = 'zero';       -- IDCG 0 scores 0; or 'one', 'nan', 'skip' (null)
--   SET VARIABLE tie_bounds = true;          -- also the orderings 'worst' and 'best'
--   SET VARIABLE measures = ['ndcg', 'P', 'recall', 'map', 'recip_rank', 'success'];
--
-- Creates: view scored (ordering, query_id, k, cg, dcg, idcg, ndcg, P, recall, map,
-- recip_rank, success): one row per evaluated query, cutoff and ordering ('retrieved', and
-- with tie_bounds 'worst' and 'best'); the companions (defined in sql/companions.sql) only
-- when asked for and of 'retrieved', else null.

create or replace temp view scored as
with

-- read twice below (the run's sums and the ideal's): one CTE, computed once
sums as (
    select * from sums_at_cutoffs
),

judged_queries as (
    select distinct judgments.query_id
    from judgments
),

-- the judged queries the run has, or with all_queries every judged query
evaluated_queries as (
    select judged_queries.query_id
    from judged_queries
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

final as (
    select
        orderings.ordering,
        evaluated_queries.query_id,
        cutoffs.k,
        coalesce(retrieved_sums.cg, 0.0) as cg,
        coalesce(retrieved_sums.dcg, 0.0) as dcg,
        coalesce(ideal_sums.dcg, 0.0) as idcg,
        case
            when coalesce(ideal_sums.dcg, 0.0) > 0 then coalesce(retrieved_sums.dcg, 0.0) / ideal_sums.dcg
            when getvariable('empty_ideal') = 'one' then 1.0
            when getvariable('empty_ideal') = 'nan' then cast('NaN' as double)
            when getvariable('empty_ideal') = 'skip' then cast(null as double)
            else 0.0
        end as ndcg,
        case
            when list_contains(getvariable('measures'), 'P') then coalesce(retrieved_sums.found, 0) / cutoffs.k
        end as "P",
        case
            when list_contains(getvariable('measures'), 'recall')
                then coalesce(retrieved_sums.found / nullif(companions.relevant_judged, 0), 0.0)
        end as recall,
        case
            when list_contains(getvariable('measures'), 'map')
                then coalesce(retrieved_sums.precision_sum / nullif(companions.relevant_judged, 0), 0.0)
        end as map,
        case
            when list_contains(getvariable('measures'), 'recip_rank')
                then case when retrieved_sums.found > 0 then 1.0 / retrieved_sums.first_rank else 0.0 end
        end as recip_rank,
        case
            when list_contains(getvariable('measures'), 'success')
                then cast(coalesce(retrieved_sums.found > 0, false) as double)
        end as success
    from evaluated_queries
    cross join cutoffs
    cross join orderings
    left join sums as retrieved_sums
        on orderings.ordering = retrieved_sums.ranking
        and evaluated_queries.query_id = retrieved_sums.query_id
        and cutoffs.k is not distinct from retrieved_sums.k
    left join sums as ideal_sums
        on ideal_sums.ranking = 'ideal'
        and evaluated_queries.query_id = ideal_sums.query_id
        and cutoffs.k is not distinct from ideal_sums.k
    -- the companions' only where asked for (then every judged query is there)
    left join companions
        on orderings.ordering = 'retrieved' and evaluated_queries.query_id = companions.query_id
)

select * from final;
