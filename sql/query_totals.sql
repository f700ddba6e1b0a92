-- query_totals.sql: per judged query, its judged documents where each counted signal holds.
--
-- Step 9 of the per-query table: the per-query counters (accumulation in_qrels of
-- pipeline/spec.py), the same at every cutoff; the denominators of recall and AP.
-- Reads: view judgments (sql/judgments.sql).
--
-- Variables:
--   SET VARIABLE signals = ['relevant'];     -- the signals counted; unset: every signal
--
-- Creates: view query_totals (query_id, relevant_in_qrels, judged_in_qrels,
-- nonrelevant_in_qrels): every judged query (the evaluated ones are among them), when a
-- signal is counted (no rows otherwise); a signal not in `signals` is null. Gains play no
-- part: relevant is a judged label (>= 0) at or above relevance_threshold (> 0 when unset).

create or replace temp view query_totals as
with

final as (
    select
        judgments.query_id,
        case when list_contains(coalesce(getvariable('signals'), ['relevant']), 'relevant')
                then sum(cast(judgments.relevant as bigint)) end as relevant_in_qrels,
        case when list_contains(coalesce(getvariable('signals'), ['judged']), 'judged')
                then sum(cast(judgments.judged as bigint)) end as judged_in_qrels,
        case when list_contains(coalesce(getvariable('signals'), ['nonrelevant']), 'nonrelevant')
                then sum(cast(judgments.nonrelevant as bigint)) end as nonrelevant_in_qrels
    from judgments
    -- no signal counted (NDCG alone): no rows, and nothing of this step runs
    where coalesce(array_length(getvariable('signals')) > 0, true)
    group by judgments.query_id
)

select * from final;
