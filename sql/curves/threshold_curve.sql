-- threshold_curve.sql: per query, the sums of scikit-learn's average precision over its distinct scores.
--
-- Reads: views retrieved (sql/ranking/retrieved.sql) and deduplicated (sql/ranking/deduplicated.sql:
-- each result's doc_weight, 1 without doc_weight_col).
--
-- Variables:
--   SET VARIABLE curves = ['threshold_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE relevance_threshold = 1;     -- a label >= this is relevant (null: a label above 0)
--
-- Creates: view threshold_curve (query_id, threshold_precision_sum, threshold_relevant_weight), a
-- row per query with a ranking when the measures asked read it (average_precision_score):
-- scikit-learn's precision_recall_curve over the ranking, each distinct score t one threshold, tied
-- scores together whatever their order, a result weighing its doc_weight (its sample_weight) over the
-- largest of its ranking's.
-- threshold_precision_sum is the sum over the thresholds of (the relevant weight scored t) x (the
-- relevant weight scored >= t) / (the weight scored >= t), threshold_relevant_weight the relevant
-- weight of the ranking, so average_precision_score is their ratio (0 when there is none).

create or replace temp view threshold_curve as
with

-- each result's weight scaled by the largest of its ranking (AP is a ratio of its weights): a
-- ranking's weights summed stay finite (three of 1e308 gave 0.0 for 1/3)
weighed as (
    select
        retrieved.query_id,
        retrieved.score,
        retrieved.label,
        case
            when max(deduplicated.doc_weight) over (partition by retrieved.query_id) > 0
                then deduplicated.doc_weight / max(deduplicated.doc_weight) over (partition by retrieved.query_id)
            else deduplicated.doc_weight
        end as weight
    from retrieved
    inner join deduplicated
        on retrieved.query_id = deduplicated.query_id and retrieved.doc_id = deduplicated.doc_id
    where retrieved.ordering = 'retrieved' and list_contains(getvariable('curves'), 'threshold_curve')
),

thresholds as (
    select
        weighed.query_id,
        weighed.score,
        sum(
            case
                when coalesce(
                    case
                        when getvariable('relevance_threshold') is null then weighed.label > 0
                        else weighed.label >= greatest(getvariable('relevance_threshold'), 0)
                    end,
                    false
                ) then weighed.weight
                else 0.0
            end
        ) as relevant_weight,
        sum(weighed.weight) as weight
    from weighed
    group by weighed.query_id, weighed.score
),

scored_at_or_above as (
    select
        thresholds.query_id,
        thresholds.relevant_weight,
        sum(thresholds.relevant_weight) over above as relevant_above,
        sum(thresholds.weight) over above as weight_above
    from thresholds
    window above as (
        partition by thresholds.query_id
        order by thresholds.score desc nulls last
        rows between unbounded preceding and current row
    )
),

final as (
    select
        scored_at_or_above.query_id,
        sum(
            case
                when scored_at_or_above.weight_above > 0
                    -- the precision first: weight x weight underflows (1e-200) or overflows (1e200)
                    then
                        scored_at_or_above.relevant_weight
                        * (scored_at_or_above.relevant_above / scored_at_or_above.weight_above)
                else 0.0
            end
        ) as threshold_precision_sum,
        sum(scored_at_or_above.relevant_weight) as threshold_relevant_weight
    from scored_at_or_above
    group by scored_at_or_above.query_id
)

select * from final;
