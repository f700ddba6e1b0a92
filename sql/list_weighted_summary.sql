-- list_weighted_summary.sql: the summary's means weighted by TF-Ranking's list weights (doc_weight_col).
--
-- Input: the table per_query and the view list_weights (sql/list_weights.sql); variable doc_weight_col.
--
-- Creates: view list_weighted_summary (k, queries, then cg, dcg, idcg, ndcg, P, map as per_query
-- has them): per cutoff, each mean sum(w * x) / sum(w) over the queries sql/summary.sql averages,
-- w the list weight of the measure (weight for ndcg, cg, dcg, idcg; weight_relevant for P and
-- map), summed in query order as sql/summary.sql sums, for the same bits on every run.

create or replace temp view list_weighted_summary as
with

kept as (
    select
        per_query.*,
        list_weights.weight as ndcg_weight,
        list_weights.weight_relevant as relevant_weight,
        -- each group of columns has one at least: P and map may not be asked
        cast(null as double) as ndcg_anchor,
        cast(null as double) as relevant_anchor
    from per_query
    inner join list_weights on cast(per_query.query_id as varchar) = list_weights.query_id
    where per_query.ndcg is not null
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
        sum(columns(lambda c: list_contains(['P', 'map', 'relevant_anchor'], c)) * kept.relevant_weight) over running
    from kept
    window running as (partition by kept.k order by kept.query_id asc rows unbounded preceding)
),

totals as (
    select
        cumulative.k,
        cumulative.queries,
        columns(lambda c: list_contains(['cg', 'dcg', 'idcg', 'ndcg', 'ndcg_anchor'], c)) / cumulative.ndcg_total,
        columns(lambda c: list_contains(['P', 'map', 'relevant_anchor'], c)) / cumulative.relevant_total
    from cumulative
    where cumulative.position = cumulative.queries
)

select
    cutoffs.k,
    coalesce(totals.queries, 0) as queries,
    totals.* exclude (k, queries, ndcg_anchor, relevant_anchor)
from (select distinct per_query.k from per_query) as cutoffs
left join totals on totals.k is not distinct from cutoffs.k
where getvariable('doc_weight_col') is not null;
-- noqa: enable=RF02,RF03
