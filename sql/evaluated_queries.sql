-- evaluated_queries.sql: the queries evaluated, with the per-query counters of each.
--
-- Step 10 of the per-query table (convention 5 of sql/per_query.sql).
-- Reads: views judgments (sql/judgments.sql) and run (sql/inputs.sql).
--
-- Variables:
--   SET VARIABLE all_queries = false;        -- true: qrels queries missing from the run score 0
--   SET VARIABLE signals = ['relevant'];     -- the signals counted; unset: every signal
--
-- Creates: view evaluated_queries (query_id, relevant_in_qrels, judged_in_qrels,
-- nonrelevant_in_qrels): the judged queries the run has, or with all_queries every judged
-- query, and the per-query counters (accumulation in_qrels of pipeline/spec.py, the same at
-- every cutoff): how many of the query's judged documents each signal holds for (R, the
-- relevant ones, is the denominator of recall and AP). A signal not in `signals` is null.

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
        end as nonrelevant_in_qrels
    from judgments
    group by judgments.query_id
),

final as (
    select judged_queries.*
    from judged_queries
    where
        coalesce(getvariable('all_queries'), false)
        or judged_queries.query_id in (select distinct run.query_id from run)
)

select * from final;
