-- summary.sql: each measure combined over the evaluated queries, per cutoff, as its aggregate in the registry says.
--
-- Input: table or view per_query with the columns of sql/measures/per_query.sql. Variables: the
-- registry's Measure.aggregate (bound by the engines, set by sql/generated/derived_variables.sql):
--   SET VARIABLE sum_measures = []::varchar[];           -- measures summed over the queries
--   SET VARIABLE geometric_mean_measures = []::varchar[];   -- exp(mean(ln(max(value, 1e-5)))): trec_eval's gm_map
--
-- Creates: view summary (k, queries, every measure grouped as means, sums and geometric means,
-- tie_sensitive_queries): queries, how many were combined; k null, the whole ranking; a measure
-- null in every row is null. A null ndcg (empty_ideal 'skip') leaves its query out of every
-- measure and the count; a NaN one (empty_ideal 'nan') makes the ndcg mean NaN. With tie bounds:
-- the means of ndcg_min, ndcg_max, and how many queries an order of their ties could score
-- differently (ndcg_max - ndcg_min > 1e-12); all three null without.

create or replace temp view summary as
with

-- DuckDB refuses a columns(...) that selects no column: each aggregate's set holds a null column
-- of its own (an anchor), dropped at the end. Each query's place in id order per cutoff: every sum
-- below adds the queries one by one in that order, the same bits on every run (a parallel sum()
-- does not), sorting by the place, not the id (220,000 rows: 1.13 s -> 0.81 s, from window sums).
kept as (
    select
        per_query.*,
        row_number() over (partition by per_query.k order by per_query.query_id asc) as place,
        cast(null as double) as sum_anchor,
        cast(null as double) as geometric_mean_anchor
    from per_query
    where per_query.ndcg is not null
),

-- Every measure keeps its name; the geometric means sum logarithms.
-- noqa: disable=RF02,RF03
sums as (
    select
        kept.k,
        count(*) as queries,
        sum(
            columns(
                lambda c: not list_contains(['query_id', 'k', 'place', 'ties_straddle_k', 'geometric_mean_anchor'], c)
                and not list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
            )
            order by kept.place
        ),
        -- the floor is null where the value is (greatest skips a null): a measure null at a
        -- cutoff (gm_bpref, of the whole ranking only) has no geometric mean there, as on Polars
        sum(
            ln(list_transform(
                [columns(
                    lambda c: c = 'geometric_mean_anchor'
                    or list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
                )],
                lambda v: greatest(v, 1e-5) + 0 * v
            )[1])
            order by kept.place
        ),
        sum(case when kept.ndcg_max - kept.ndcg_min > 1e-12 then 1 when kept.ndcg_min is not null then 0 end)
            as tie_sensitive_queries
    from kept
    group by kept.k
),

-- each measure combined: a mean, a sum, or exp of the mean of the logarithms
totals as (
    select
        sums.k,
        sums.queries,
        columns(
            lambda c: not list_contains(['k', 'queries', 'tie_sensitive_queries'], c)
            and not list_contains(['sum_anchor', 'geometric_mean_anchor'], c)
            and not list_contains(coalesce(getvariable('sum_measures'), cast([] as varchar[])), c)
            and not list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
        ) / sums.queries,
        columns(
            lambda c: c = 'sum_anchor' or list_contains(coalesce(getvariable('sum_measures'), cast([] as varchar[])), c)
        ),
        exp(columns(
            lambda c: c = 'geometric_mean_anchor'
            or list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
        ) / sums.queries),
        cast(sums.tie_sensitive_queries as bigint) as tie_sensitive_queries
    from sums
),

-- noqa: enable=RF02,RF03
cutoffs as (
    select distinct per_query.k from per_query
),

final as (
    select
        cutoffs.k,
        coalesce(totals.queries, 0) as queries,
        totals.* exclude (k, queries, sum_anchor, geometric_mean_anchor)  -- noqa: RF02
    from cutoffs
    left join totals on totals.k is not distinct from cutoffs.k
)

select * from final
order by k asc nulls first;
