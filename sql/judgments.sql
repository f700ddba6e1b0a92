-- judgments.sql: the gain of every judged document, and whether it counts as judged.
--
-- Step 2 of the per-query table (conventions 2 and 6 of sql/per_query.sql).
-- Reads: view qrels (query_id, doc_id, relevance), e.g. from sql/inputs.sql.
--
-- Variables:
--   SET VARIABLE gain = 'linear';            -- or 'exponential' (2^label - 1) or 'binary' (1 if relevant)
--   SET VARIABLE gain_map = MAP {1: 3, 2: 9, 4: 4.5};   -- level -> gain; unmapped levels use `gain`
--   SET VARIABLE relevance_threshold = 1;    -- unset: label > 0 is relevant ('binary' gain)
--   SET VARIABLE measures = ['ndcg', 'P'];   -- relevant is computed only with a companion measure
--
-- Creates: view judgments (query_id, doc_id, gain double, judged boolean, relevant boolean).
-- A negative or null label gains 0 and, negative, counts as unjudged; relevant (what the
-- companion measures count) is a judged label at or above relevance_threshold, and false
-- for every row when no companion measure is asked for.

create or replace temp view judgments as
with

-- one unnest of (key, value) entries rather than two zipped unnests: portable to Spark
gain_map as (
    select
        cast(entries.entry.key as double) as level,
        cast(entries.entry.value as double) as mapped_gain
    from (select unnest(map_entries(getvariable('gain_map'))) as entry) as entries
),

final as (
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
        -- read only by the companion measures: constant false unless one is asked for (measures
        -- holds a family besides NDCG, which may be named or not), so the later steps' "or
        -- relevant" folds away
        coalesce(
            array_length(list_distinct(list_concat(getvariable('measures'), ['ndcg']))) > 1
            and qrels.relevance >= 0
            and (
                (getvariable('relevance_threshold') is null and qrels.relevance > 0)
                or qrels.relevance >= getvariable('relevance_threshold')
            ),
            false
        ) as relevant
    from qrels
    left join gain_map on cast(qrels.relevance as double) = gain_map.level
)

select * from final;
