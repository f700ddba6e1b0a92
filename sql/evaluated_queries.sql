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

-- the judgments, and with queries_without_judgments 'evaluate' each of the run's queries
-- without one as a row judging nothing: the sums below count 0 for it
judgment_rows as (
    select judgments.query_id, judgments.relevant, judgments.judged, judgments.nonrelevant, judgments.pooled
    from judgments
    union all
    select run_queries.query_id, false as relevant, false as judged, false as nonrelevant, false as pooled
    from (select distinct run.query_id from run) as run_queries
    where
        getvariable('queries_without_judgments') = 'evaluate'
        and not exists (
            select 1 from judgments
            where judgments.query_id = run_queries.query_id
        )
),

evaluable_queries as (
    select
        j.query_id,
        case
            when list_contains(coalesce(getvariable('signals'), ['relevant']), 'relevant')
                then sum(cast(j.relevant as bigint))
        end as relevant_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['judged']), 'judged')
                then sum(cast(j.judged as bigint))
        end as judged_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['nonrelevant']), 'nonrelevant')
                then sum(cast(j.nonrelevant as bigint))
        end as nonrelevant_in_qrels,
        case
            when list_contains(coalesce(getvariable('signals'), ['pooled']), 'pooled')
                then sum(cast(j.pooled as bigint))
        end as pooled_in_qrels
    from judgment_rows as j
    where
        coalesce(getvariable('all_queries'), false)
        or j.query_id in (select distinct run.query_id from run)
    group by j.query_id
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
