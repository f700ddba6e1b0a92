-- weighted_ap_curve.sql: per query and cutoff, the sums of TF-Ranking's AP and recall with per-document weights.
--
-- Reads: views retrieved (sql/ranking/retrieved.sql), deduplicated (sql/ranking/deduplicated.sql:
-- each result's doc_weight) and cutoffs (sql/ranking/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE curves = ['weighted_ap_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE relevance_threshold = 1;     -- a label >= this is relevant (null: a label above 0)
--
-- Creates: view weighted_ap_curve (query_id, k, weighted_precision_sum, relevant_weight, relevant_listed),
-- a row per query with a ranking and cutoff (k null: the whole ranking) when the measures asked read it
-- (map or recall under doc_weight_col): weighted_precision_sum is the sum over the relevant results at or
-- above k of (relevant at or above its rank / its rank) x its weight, relevant_weight the sum of the
-- weights of the relevant results of the whole list (TF-Ranking's MeanAveragePrecisionMetric: its
-- total_relevance ignores topn), so AP@k is their ratio (0 when the list has no relevant weight);
-- relevant_listed how many they are, what TF-Ranking's RecallMetric divides by.

create or replace temp view weighted_ap_curve as
with

weighted_ranks as (
    select
        retrieved.query_id,
        retrieved.rank,
        deduplicated.doc_weight,
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
    where retrieved.ordering = 'retrieved' and list_contains(getvariable('curves'), 'weighted_ap_curve')
),

found as (
    select
        weighted_ranks.*,
        sum(case when weighted_ranks.is_relevant then 1 else 0 end) over (
            partition by weighted_ranks.query_id
            order by weighted_ranks.rank asc
            rows between unbounded preceding and current row
        ) as relevant_above
    from weighted_ranks
),

-- running sums down the ranks, in rank order: the same bits on every run (a sum() over a query's
-- rows adds them in whatever order they sit); every term is >= 0, so a sum to k is the largest at
-- or above k
contributions as (
    select
        found.query_id,
        found.rank,
        sum(
            case
                when found.is_relevant then cast(found.relevant_above as double) / found.rank * found.doc_weight
                else 0.0
            end
        ) over down_the_ranks as contribution_above,
        sum(case when found.is_relevant then found.doc_weight else 0.0 end) over down_the_ranks as relevant_weight,
        case when found.is_relevant then 1 else 0 end as relevant_listed
    from found
    window down_the_ranks as (
        partition by found.query_id order by found.rank asc rows between unbounded preceding and current row
    )
),

final as (
    select
        contributions.query_id,
        cutoffs.k,
        coalesce(
            max(
                case
                    when cutoffs.k is null or contributions.rank <= cutoffs.k then contributions.contribution_above
                end
            ),
            0.0
        ) as weighted_precision_sum,
        max(contributions.relevant_weight) as relevant_weight,
        sum(contributions.relevant_listed) as relevant_listed
    from contributions
    cross join cutoffs
    group by contributions.query_id, cutoffs.k
)

select * from final;
