-- list_weighted_summary.sql: the summary's means weighted by TF-Ranking's list weights (doc_weight_col).
-- Input: the table per_query, the view list_weights (sql/list_weights.sql); variables doc_weight_col, run_path.
-- Creates: view list_weighted_summary (k, queries, cg, dcg, idcg, ndcg, P, map as per_query has them): per
-- cutoff, each mean sum(w * x) / sum(w) over the queries sql/summary.sql averages, w the measure's list weight
-- (weight: ndcg, cg, dcg, idcg; weight_relevant: P, map), summed in query order as sql/summary.sql sums; or
-- the command line's error for weights whose products leave float64's normal numbers.

create or replace temp view list_weighted_summary as
with

kept as (
    select
        per_query.*,
        list_weights.weight as ndcg_weight,
        list_weights.weight_relevant as relevant_weight,
        cast(null as double) as ndcg_anchor,  -- each group of columns has one at least: P, map may be unasked
        cast(null as double) as relevant_anchor
    from per_query
    inner join list_weights on per_query.query_id = list_weights.query_id
    where per_query.ndcg is not null
),

-- pipeline/weights.py's order: an overflow in cg, dcg, idcg (part 1), a list weight (2); a subnormal idcg, weight
checked as (
    select 1 as part, q.query_id, q.k, 1 as name_order, 'cg' as measured, q.cg as amount from per_query as q
    union all
    select 1 as part, q.query_id, q.k, 2 as name_order, 'dcg' as measured, q.dcg as amount from per_query as q
    union all
    select 1 as part, q.query_id, q.k, 3 as name_order, 'idcg' as measured, q.idcg as amount from per_query as q
    union all
    select 2 as part, w.query_id, null as k, 1 as name_order, 'weight' as measured, w.weight as amount
    from list_weights as w
    union all
    select 2 as part, w.query_id, null as k, 2 as name_order, 'weight_P' as measured, w.weight_relevant as amount
    from list_weights as w
),

unrepresentable as (
    select
        checked.query_id,
        checked.measured,
        checked.amount,
        isinf(checked.amount) as too_large,
        checked.part + case when isinf(checked.amount) then 0 else 2 end as step
    from checked
    where
        isinf(checked.amount)
        or (checked.part = 2 or checked.measured = 'idcg')
        and checked.amount > 0 and checked.amount < 2.2250738585072014e-308
    order by step asc, checked.query_id asc, checked.k asc nulls first, checked.name_order asc
    limit 1
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
where getvariable('doc_weight_col') is not null and (
    not exists (from unrepresentable) or error((
        select
            cast(getvariable('run_path') as varchar) || ': the weights of column '''
            || getvariable('doc_weight_col') || ''' are ' || case
                when u.too_large then 'too large: weight x gain overflows Float64'
                else 'too small: weight x gain is a subnormal number, which keeps few digits'
            end || ' in query ''' || cast(u.query_id as varchar) || ''' (' || u.measured || ' '
            || cast(u.amount as varchar) || '); scale them ' || case when u.too_large then 'down' else 'up' end
            || ' (one factor for every weight changes no value: NDCG, P and AP are ratios, and the list '
            || 'weights weigh the means relative to each other)'
        from unrepresentable as u
    ))
);
-- noqa: enable=RF02,RF03
