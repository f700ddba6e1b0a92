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

-- DuckDB refuses a columns(...) that selects no column: each aggregate's set holds a null
-- column of its own (an anchor), dropped at the end
kept as (
    select per_query.*, cast(null as double) as sum_anchor, cast(null as double) as geometric_mean_anchor
    from per_query
    where per_query.ndcg is not null
),

-- Running sums in query order, read off at the last query: the same bits on every run (a parallel
-- sum() does not give them). Every measure keeps its name; the geometric means sum logarithms.
-- noqa: disable=RF02,RF03
cumulative as (
    select
        kept.k,
        row_number() over running as position,
        count(*) over (partition by kept.k) as queries,
        sum(
            columns(
                lambda c: not list_contains(['query_id', 'k', 'ties_straddle_k', 'geometric_mean_anchor'], c)
                and not list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
            )
        ) over running,
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
        ) over running,
        sum(
            case
                when kept.ndcg_max - kept.ndcg_min > 1e-12 then cast(1 as bigint)
                when kept.ndcg_min is not null then cast(0 as bigint)
            end
        ) over running as tie_sensitive_queries
    from kept
    window running as (partition by kept.k order by kept.query_id asc rows unbounded preceding)
),

-- each measure combined: a mean, a sum, or exp of the mean of the logarithms
totals as (
    select
        cumulative.k,
        cumulative.queries,
        columns(
            lambda c: not list_contains(
                ['k', 'position', 'queries', 'tie_sensitive_queries', 'sum_anchor', 'geometric_mean_anchor'], c
            )
            and not list_contains(coalesce(getvariable('sum_measures'), cast([] as varchar[])), c)
            and not list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
        ) / cumulative.queries,
        columns(
            lambda c: c = 'sum_anchor' or list_contains(coalesce(getvariable('sum_measures'), cast([] as varchar[])), c)
        ),
        exp(columns(
            lambda c: c = 'geometric_mean_anchor'
            or list_contains(coalesce(getvariable('geometric_mean_measures'), cast([] as varchar[])), c)
        ) / cumulative.queries),
        cast(cumulative.tie_sensitive_queries as bigint) as tie_sensitive_queries
    from cumulative
    where cumulative.position = cumulative.queries
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
