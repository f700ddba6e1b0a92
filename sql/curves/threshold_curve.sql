-- threshold_curve.sql: per query, the sums of scikit-learn's average precision over its distinct scores.
--
-- Reads: views retrieved (sql/ranking/retrieved.sql), deduplicated (each result's doc_weight, 1 without one).
--
-- Variables:
--   SET VARIABLE curves = ['threshold_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE relevance_threshold = 1;     -- a label >= this is relevant (null: a label above 0)
--
-- Creates: view threshold_curve (query_id, threshold_precision_sum, threshold_relevant_weight), a row per
-- query with a ranking when average_precision_score is asked: scikit-learn's precision_recall_curve over
-- the ranking, each distinct score t one threshold (tied scores together), a result weighing its doc_weight
-- over the largest of its ranking's: the sum over the thresholds of (the relevant weight scored t) x (the
-- relevant weight scored >= t) / (the weight scored >= t), and the ranking's relevant weight.

create or replace temp view threshold_curve as
with

-- each result's weight over the largest of its ranking (AP is a ratio of its weights): the
-- ranking's summed weights stay finite (three of 1e308 gave 0.0 for 1/3)
weighed as (
    select
        retrieved.query_id,
        retrieved.score,
        deduplicated.doc_weight / max(deduplicated.doc_weight) over (partition by retrieved.query_id) as weight,
        coalesce(
            case
                when getvariable('relevance_threshold') is null then retrieved.label > 0
                else retrieved.label >= greatest(getvariable('relevance_threshold'), 0)
            end,
            false
        ) as is_relevant
    from retrieved
    inner join deduplicated
        on retrieved.query_id = deduplicated.query_id and retrieved.doc_id = deduplicated.doc_id
    where retrieved.ordering = 'retrieved' and list_contains(getvariable('curves'), 'threshold_curve')
),

-- the weight scored at or above each result and its relevant part: running sums from the highest score
-- down, within a score the heaviest, then the relevant first: rows tied on all three add alike, and DuckDB
-- adds a window's terms in a tree shaped by the rows' places, not one by one: the same bits on every run
running as (
    select
        weighed.query_id,
        weighed.score,
        sum(weighed.weight) over ordered as weight_above,
        sum(case when weighed.is_relevant then weighed.weight else 0.0 end) over ordered as relevant_above
    from weighed
    window ordered as (
        partition by weighed.query_id
        order by weighed.score desc nulls last, weighed.weight desc, weighed.is_relevant desc
        rows between unbounded preceding and current row
    )
),

-- each score's running sums at its last row (the largest: every weight is >= 0), and its own
-- relevant weight, the step from the score above
thresholds as (
    select
        running.query_id,
        running.score,
        max(running.weight_above) as weight_above,
        max(running.relevant_above) as relevant_above,
        max(running.relevant_above) - coalesce(lag(max(running.relevant_above)) over highest_first, 0.0)
            as relevant_weight
    from running
    group by running.query_id, running.score
    window highest_first as (partition by running.query_id order by running.score desc nulls last)
),

-- the precision first (weight x weight underflows at 1e-200, overflows at 1e200), summed from the
-- highest score down
summed as (
    select
        thresholds.query_id,
        thresholds.relevant_above,
        sum(
            case
                when thresholds.weight_above > 0
                    then thresholds.relevant_weight * (thresholds.relevant_above / thresholds.weight_above)
                else 0.0
            end
        ) over (
            partition by thresholds.query_id
            order by thresholds.score desc nulls last
            rows between unbounded preceding and current row
        ) as precision_sum
    from thresholds
),

-- every term is >= 0: each running sum's largest is its total
final as (
    select
        summed.query_id,
        max(summed.precision_sum) as threshold_precision_sum,
        max(summed.relevant_above) as threshold_relevant_weight
    from summed
    group by summed.query_id
)

select * from final;
