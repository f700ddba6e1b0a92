-- evaluated_queries.sql: the queries evaluated, with how many results each retrieved.
--
-- Convention 5 of sql/measures/per_query.sql. Reads: views judgments
-- (sql/ranking/judgments.sql), run (sql/inputs.sql) and retrieved (sql/ranking/retrieved.sql).
--
-- Variables:
--   SET VARIABLE all_queries = false;        -- true: qrels queries missing from the run score 0
--   SET VARIABLE queries_without_judgments = 'skip';  -- or 'evaluate': run queries not in the qrels too
--   SET VARIABLE count_retrieved = true;     -- count the results of each query (num_ret)
--
-- Creates: view evaluated_queries (query_id, retrieved_in_ranking): the judged queries the run
-- has, or with all_queries every judged query, and with queries_without_judgments 'evaluate'
-- every query of the run too; retrieved_in_ranking, with count_retrieved, how many documents
-- the ranking by score holds (sql/ranking/ranked.sql then keeps every one), else null.

create or replace temp view evaluated_queries as
with

run_queries as (
    select distinct run.query_id from run
),

judged_queries as (
    select distinct judgments.query_id from judgments
),

evaluable_queries as (
    select judged_queries.query_id
    from judged_queries
    where
        coalesce(getvariable('all_queries'), false)
        or judged_queries.query_id in (select run_queries.query_id from run_queries)
    union all
    -- the run's queries without a judgment, evaluated as queries judging nothing
    select run_queries.query_id
    from run_queries
    where
        getvariable('queries_without_judgments') = 'evaluate'
        and not exists (
            select 1 from judged_queries
            where judged_queries.query_id = run_queries.query_id
        )
),

retrieved_counts as (
    select retrieved.query_id, count(*) as retrieved_in_ranking
    from retrieved
    where retrieved.ordering = 'retrieved' and coalesce(getvariable('count_retrieved'), false)
    group by retrieved.query_id
),

final as (
    select
        evaluable_queries.query_id,
        case
            when coalesce(getvariable('count_retrieved'), false)
                then coalesce(retrieved_counts.retrieved_in_ranking, 0)
        end as retrieved_in_ranking
    from evaluable_queries
    left join retrieved_counts on evaluable_queries.query_id = retrieved_counts.query_id
)

select * from final;
