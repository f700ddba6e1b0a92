-- judgments.sql: the gain of every judged document, and the per-rank signals it carries.
--
-- Step 2 of the per-query table (conventions 2 and 6 of sql/per_query.sql).
-- Reads: view qrels (query_id, doc_id, relevance), e.g. from sql/inputs.sql.
--
-- Variables:
--   SET VARIABLE gain = 'linear';            -- or 'exponential' (2^label - 1) or 'binary' (1 if relevant)
--   SET VARIABLE gain_map = MAP {1: 3, 2: 9, 4: 4.5};   -- level -> gain; unmapped levels use `gain`
--   SET VARIABLE relevance_threshold = 1;    -- unset: label > 0 is relevant ('binary' gain)
--   SET VARIABLE signals = ['relevant'];     -- what the asked counters read; unset: every signal
--
-- Creates: view judgments (query_id, doc_id, gain double, judged, relevant, nonrelevant,
-- pooled, counted boolean). A negative or null label gains 0 and, negative, counts as
-- unjudged. The signals (pipeline/registry/'s SIGNALS, read by sql/counters.sql): relevant, a
-- judged label at or above relevance_threshold; judged, a label >= 0; nonrelevant, judged and
-- not relevant; pooled, every document of the judgments (trec_eval's pool, for infAP).
-- counted: a signal of `signals` holds, so the ranks of the document are kept for the
-- counters. The engines bind `signals` (empty for NDCG alone: counted is then a constant
-- false, and the later steps' "or counted" folds away).

create or replace temp view judgments as
with

-- one unnest of (key, value) entries rather than two zipped unnests: portable to Spark
gain_map as (
    select
        cast(entries.entry.key as double) as level,
        cast(entries.entry.value as double) as mapped_gain
    from (select unnest(map_entries(getvariable('gain_map'))) as entry) as entries
),

labelled as (
    select
        qrels.query_id,
        qrels.doc_id,
        case
            when qrels.relevance is null or qrels.relevance < 0 then 0.0
            when gain_map.mapped_gain is not null then gain_map.mapped_gain
            when coalesce(getvariable('gain'), 'linear') = 'binary'
                then case
                    when getvariable('relevance_threshold') is null and qrels.relevance > 0 then 1.0
                    when qrels.relevance >= getvariable('relevance_threshold') then 1.0
                    else 0.0
                end
            when coalesce(getvariable('gain'), 'linear') = 'exponential'
                then pow(2.0, cast(qrels.relevance as double)) - 1.0
            else cast(qrels.relevance as double)
        end as gain,
        -- a negative label counts as unjudged (trec_eval -J drops it too)
        coalesce(qrels.relevance >= 0, false) as judged,
        coalesce(
            qrels.relevance >= 0
            and (
                (getvariable('relevance_threshold') is null and qrels.relevance > 0)
                or qrels.relevance >= getvariable('relevance_threshold')
            ),
            false
        ) as relevant
    from qrels
    left join gain_map on cast(qrels.relevance as double) = gain_map.level
),

final as (
    select
        labelled.*,
        labelled.judged and not labelled.relevant as nonrelevant,
        true as pooled,
        coalesce(
            (list_contains(coalesce(getvariable('signals'), ['relevant']), 'relevant') and labelled.relevant)
            or (list_contains(coalesce(getvariable('signals'), ['judged']), 'judged') and labelled.judged)
            or (
                list_contains(coalesce(getvariable('signals'), ['nonrelevant']), 'nonrelevant')
                and labelled.judged
                and not labelled.relevant
            )
            or list_contains(coalesce(getvariable('signals'), ['pooled']), 'pooled'),
            false
        ) as counted
    from labelled
)

select * from final;
