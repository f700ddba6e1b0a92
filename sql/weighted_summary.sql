-- weighted_summary.sql: the summary's means weighted, as `ndcg evaluate --query-weights` or --doc-weight-col.
-- Input: per_query, views summary (sql/summary.sql), query_weights (sql/query_weight_rules.sql), list_weighted_summary
-- (sql/list_weighted_summary.sql); variables sum_measures, geometric_mean_measures, query_weights_path, doc_weight_col.
-- Creates: view weighted_summary: with query_weights_path, summary's columns over the queries summary.sql averages,
-- each mean sum(w * x) / sum(w), each geometric mean exp(sum(w * ln(max(x, 1e-5))) / sum(w)), w over the largest (w * x
-- stays finite); sums, queries, tie_sensitive_queries unweighted; doc_weight_col: list_weighted_summary; else summary.

create or replace temp view weighted_summary as
with

kept as (
    select
        per_query.*,
        query_weights.weight / max(query_weights.weight) over (partition by per_query.k) as query_weight,
        cast(null as double) as sum_anchor,
        cast(null as double) as geometric_mean_anchor
    from per_query
    inner join query_weights on cast(per_query.query_id as varchar) = query_weights.query_id
    where per_query.ndcg is not null
),

-- noqa: disable=RF02,RF03
cumulative as (
    select
        kept.k,
        row_number() over running as position,
        count(*) over (partition by kept.k) as queries,
        sum(kept.query_weight) over running as weight_total,
        sum(
            columns(
                lambda c: not list_contains(
                    ['query_id', 'k', 'ties_straddle_k', 'query_weight', 'sum_anchor', 'geometric_mean_anchor'], c
                )
                and not list_contains(coalesce(getvariable('sum_measures'), cast([] as varchar[])), c)
                and not list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
            ) * kept.query_weight
        ) over running,
        sum(
            columns(
                lambda c: c = 'sum_anchor' or list_contains(coalesce(getvariable('sum_measures'), ['']), c)
            )
        ) over running,
        sum(
            ln(list_transform(
                [columns(
                    lambda c: c = 'geometric_mean_anchor'
                    or list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
                )],
                lambda v: greatest(v, 1e-5) + 0 * v
            )[1]) * kept.query_weight
        ) over running,
        -- null without tie bounds, as in sql/summary.sql
        sum(cast(kept.ndcg_max - kept.ndcg_min > 1e-12 as bigint)) over running as tie_sensitive_queries
    from kept
    window running as (partition by kept.k order by kept.query_id asc rows unbounded preceding)
),

totals as (
    select
        cumulative.k,
        cumulative.queries,
        columns(
            lambda c: not list_contains(
                ['k', 'position', 'queries', 'weight_total', 'tie_sensitive_queries'], c
            )
            and not list_contains(['sum_anchor', 'geometric_mean_anchor'], c)
            and not list_contains(coalesce(getvariable('sum_measures'), cast([] as varchar[])), c)
            and not list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
        ) / cumulative.weight_total,
        columns(
            lambda c: c = 'sum_anchor' or list_contains(coalesce(getvariable('sum_measures'), cast([] as varchar[])), c)
        ),
        exp(columns(
            lambda c: c = 'geometric_mean_anchor'
            or list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
        ) / cumulative.weight_total),
        cast(cumulative.tie_sensitive_queries as bigint) as tie_sensitive_queries
    from cumulative
    where cumulative.position = cumulative.queries
),

weighted as (
    select
        cutoffs.k,
        coalesce(totals.queries, 0) as queries,
        totals.* exclude (k, queries, sum_anchor, geometric_mean_anchor)
    from (select distinct per_query.k from per_query) as cutoffs
    left join totals on totals.k is not distinct from cutoffs.k
)
-- noqa: enable=RF02,RF03

select * from summary
where getvariable('query_weights_path') is null and getvariable('doc_weight_col') is null
union all by name
select * from weighted
where getvariable('query_weights_path') is not null
union all by name
select * from list_weighted_summary
where getvariable('doc_weight_col') is not null
order by k asc nulls first;
