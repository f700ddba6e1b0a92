-- judgments.sql: each judged document's label and gain: the per-rank judgment the later steps carry.
--
-- Conventions 2 and 6 of sql/measures/per_query.sql. Reads: view qrels (query_id, doc_id,
-- relevance, subtopic), e.g. from sql/inputs.sql and sql/aligned_inputs.sql.
--
-- Variables:
--   SET VARIABLE gain = 'linear';            -- or 'exponential' (2^label - 1) or 'binary' (1 if relevant)
--   SET VARIABLE gain_map = MAP {1: 3, 2: 9, 4: 4.5};   -- level -> gain; unmapped levels use `gain`
--   SET VARIABLE relevance_threshold = 1;    -- unset: label > 0 is relevant ('binary' gain)
--
-- Creates: view judgments (query_id, doc_id, label double, gain double). A negative or null
-- label gains 0 (a negative one counts as unjudged). The label is carried through the ranking
-- once, as trec_eval carries its judgment list: what a rank's judgment says (relevant, judged,
-- ...) is decided from it by sql/counters/signals.sql, under the registry's definitions.

create or replace temp view judgments as
with

-- one unnest of (key, value) entries rather than two zipped unnests: portable to Spark
gain_map as (
    select
        cast(entries.entry.key as double) as level,
        cast(entries.entry.value as double) as mapped_gain
    from (select unnest(map_entries(getvariable('gain_map'))) as entry) as entries
),

-- a row per judged document: judged per subtopic, its largest label over its subtopics (how
-- ndeval counts a document relevant to the topic); otherwise its one label
document_labels as (
    select qrels.query_id, qrels.doc_id, max(qrels.relevance) as relevance
    from qrels
    group by qrels.query_id, qrels.doc_id
),

final as (
    select
        qrels.query_id,
        qrels.doc_id,
        cast(qrels.relevance as double) as label,
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
        end as gain
    from document_labels as qrels
    left join gain_map on cast(qrels.relevance as double) = gain_map.level
)

select * from final;
