-- list_weighted_summary.sql: the summary's means weighted by TF-Ranking's list weights (doc_weight_col).
-- Input: the table per_query, the views list_weights (sql/list_weights.sql) and unrepresentable_weights
-- (sql/list_weight_range.sql); variables doc_weight_col, run_path.
-- Creates: view list_weighted_summary (k, queries and the measures as per_query has them): per cutoff, each
-- mean sum(w * x) / sum(w) over the queries sql/summary.sql averages, w the measure's list weight (weight:
-- ndcg, cg, dcg, idcg; weight_relevant: P, recall, map, recip_rank, success; weight_listed: average_precision_score),
-- summed in query order as sql/summary.sql sums; or the command line's error for weights whose products leave
-- float64's normal numbers (the first that does, unrepresentable_weights).

create or replace temp view list_weighted_summary as
with

kept as (
    select
        per_query.*,
        -- each weight over its largest, one factor that changes no mean: weight x value stays a normal
        -- number (list weights of 1e-200 gave a mean cg of 0.0, as pipeline.aggregate scales them)
        list_weights.weight / max(list_weights.weight) over cutoff as ndcg_weight,
        list_weights.weight_relevant / max(list_weights.weight_relevant) over cutoff as relevant_weight,
        list_weights.weight_listed / max(list_weights.weight_listed) over cutoff as listed_weight,
        cast(null as double) as ndcg_anchor,  -- each group of columns has one at least: P, map may be unasked
        cast(null as double) as relevant_anchor,
        cast(null as double) as listed_anchor
    from per_query
    inner join list_weights on per_query.query_id = list_weights.query_id
    where per_query.ndcg is not null
    window cutoff as (partition by per_query.k)
),

-- noqa: disable=RF02,RF03
cumulative as (
    select
        kept.k,
        row_number() over running as position,
        count(*) over (partition by kept.k) as queries,
        sum(kept.ndcg_weight) over running as ndcg_total,
        sum(kept.relevant_weight) over running as relevant_total,
        sum(
            columns(lambda c: list_contains(['cg', 'dcg', 'idcg', 'ndcg', 'ndcg_anchor'], c)) * kept.ndcg_weight
        ) over running,
        sum(
            columns(lambda c: list_contains(['P', 'recall', 'map', 'recip_rank', 'success', 'relevant_anchor'], c))
            * kept.relevant_weight
        ) over running,
        sum(kept.listed_weight) over running as listed_total,
        sum(columns(lambda c: list_contains(['average_precision_score', 'listed_anchor'], c)) * kept.listed_weight)
            over running
    from kept
    window running as (partition by kept.k order by kept.query_id asc rows unbounded preceding)
),

totals as (
    select
        cumulative.k,
        cumulative.queries,
        columns(lambda c: list_contains(['cg', 'dcg', 'idcg', 'ndcg', 'ndcg_anchor'], c)) / cumulative.ndcg_total,
        columns(lambda c: list_contains(['P', 'recall', 'map', 'recip_rank', 'success', 'relevant_anchor'], c))
        / cumulative.relevant_total,
        columns(lambda c: list_contains(['average_precision_score', 'listed_anchor'], c)) / cumulative.listed_total
    from cumulative
    where cumulative.position = cumulative.queries
)

select
    cutoffs.k,
    coalesce(totals.queries, 0) as queries,
    totals.* exclude (k, queries, ndcg_anchor, relevant_anchor, listed_anchor)
from (select distinct per_query.k from per_query) as cutoffs
left join totals on totals.k is not distinct from cutoffs.k
where
    getvariable('doc_weight_col') is not null and (
        not exists (from unrepresentable_weights) or error((
            select
                cast(getvariable('run_path') as varchar) || ': the weights of column '''
                || getvariable('doc_weight_col') || ''' are ' || case
                    when u.too_large then 'too large: weight x gain overflows Float64'
                    else 'too small: weight x gain is a subnormal number, which keeps few digits'
                end || ' in query ''' || cast(u.query_id as varchar) || ''' (' || u.measured || ' '
                || cast(u.amount as varchar) || '); scale them ' || case when u.too_large then 'down' else 'up' end
                || ' (one factor for every weight changes no value: NDCG, P and AP are ratios, and the list '
                || 'weights weigh the means relative to each other)'
            from unrepresentable_weights as u
        ))
    )
order by cutoffs.k asc nulls first;
-- noqa: enable=RF02,RF03
