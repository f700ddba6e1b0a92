-- evaluated_queries.sql: the queries evaluated, with the per-query counters of each.
--
-- Step 10 of the per-query table (convention 5 of sql/per_query.sql).
-- Reads: views judgments (sql/judgments.sql), run (sql/inputs.sql) and retrieved.
--
-- Variables:
--   SET VARIABLE all_queries = false;        -- true: qrels queries missing from the run score 0
--   SET VARIABLE signals = ['relevant'];     -- the signals counted; unset: every signal
--
-- Creates: view evaluated_queries (query_id, relevant_in_qrels, judged_in_qrels,
-- nonrelevant_in_qrels, pooled_in_qrels, retrieved_in_ranking): the judged queries the run has, or with
-- all_queries every judged query, and the per-query counters (the same at every cutoff): how
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
        judged_queries.*,
        case
            when list_contains(coalesce(getvariable('signals'), ['retrieved']), 'retrieved')
                then coalesce(retrieved_counts.retrieved_in_ranking, 0)
        end as retrieved_in_ranking
    from judged_queries
    left join retrieved_counts on judged_queries.query_id = retrieved_counts.query_id
    where
        coalesce(getvariable('all_queries'), false)
        or judged_queries.query_id in (select distinct run.query_id from run)
)

select * from final;
