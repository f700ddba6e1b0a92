-- evaluated_queries.sql: the queries evaluated, with the per-query counters of each.
--
-- Step 10 of the per-query table (convention 5 of sql/per_query.sql).
-- Reads: views judgments (sql/judgments.sql), run (sql/inputs.sql) and retrieved.
--
-- Variables:
--   SET VARIABLE all_queries = false;        -- true: qrels queries missing from the run score 0
--   SET VARIABLE queries_without_judgments = 'skip';  -- or 'evaluate': run queries not in the qrels too
--   SET VARIABLE signals = ['relevant'];     -- the signals counted; unset: every signal
--
-- Creates: view evaluated_queries (query_id, relevant_in_qrels, judged_in_qrels,
-- nonrelevant_in_qrels, pooled_in_qrels, retrieved_in_ranking): the judged queries the run has, or
-- with all_queries every judged query, and with queries_without_judgments 'evaluate' every query
-- of the run too (its judged counts 0), and the per-query counters (the same at every cutoff): how
-- many of the query's judged documents each signal holds for (R, the relevant ones, is the
-- denominator of recall and AP), and with 'retrieved' in `signals` how many documents its
-- ranking by score holds (sql/ranked.sql then keeps every one). Not in `signals`: null.

create or replace temp view evaluated_queries as
with

judged_queries as (
    select
        judgments.query_id,
        case
            when list_contains(coalesce(getvariable('signals'), ['relevant']), 'relevant')
                then sum(cast(judgments.relevant as bigint))
        end as relevant_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['judged']), 'judged')
                then sum(cast(judgments.judged as bigint))
        end as judged_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['nonrelevant']), 'nonrelevant')
                then sum(cast(judgments.nonrelevant as bigint))
        end as nonrelevant_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['pooled']), 'pooled')
                then sum(cast(judgments.pooled as bigint))
        end as pooled_in_qrels
    from judgments
    group by judgments.query_id
),

-- the run's queries without a judgment row, evaluated as judging nothing when asked
unjudged_queries as (
    select
        run_queries.query_id,
        case
            when list_contains(coalesce(getvariable('signals'), ['relevant']), 'relevant') then cast(0 as bigint)
        end as relevant_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['judged']), 'judged') then cast(0 as bigint)
        end as judged_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['nonrelevant']), 'nonrelevant') then cast(0 as bigint)
        end as nonrelevant_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['pooled']), 'pooled') then cast(0 as bigint)
        end as pooled_in_qrels
    from (select distinct run.query_id from run) as run_queries
    left join judged_queries on run_queries.query_id = judged_queries.query_id
    where
        getvariable('queries_without_judgments') = 'evaluate'
        and judged_queries.query_id is null
),

evaluable_queries as (
    select
        judged.query_id,
        judged.relevant_in_qrels,
        judged.judged_in_qrels,
        judged.nonrelevant_in_qrels,
        judged.pooled_in_qrels
    from judged_queries as judged
    where
        coalesce(getvariable('all_queries'), false)
        or judged.query_id in (select distinct run.query_id from run)
    union all
    select
        unjudged.query_id,
        unjudged.relevant_in_qrels,
        unjudged.judged_in_qrels,
        unjudged.nonrelevant_in_qrels,
        unjudged.pooled_in_qrels
    from unjudged_queries as unjudged
),

retrieved_counts as (
    select retrieved.query_id, count(*) as retrieved_in_ranking
    from retrieved
    where
        retrieved.ordering = 'retrieved'
        and list_contains(coalesce(getvariable('signals'), ['retrieved']), 'retrieved')
    group by retrieved.query_id
),

final as (
    select
        evaluable_queries.*,
        case
            when list_contains(coalesce(getvariable('signals'), ['retrieved']), 'retrieved')
                then coalesce(retrieved_counts.retrieved_in_ranking, 0)
        end as retrieved_in_ranking
    from evaluable_queries
    left join retrieved_counts on evaluable_queries.query_id = retrieved_counts.query_id
)

select * from final;
