-- summary.sql: the mean of each measure over the evaluated queries, per cutoff.
--
-- Input: table or view per_query with the columns of sql/per_query.sql.
-- Variables: none.
--
-- Creates: view summary (k, queries, cg, dcg, idcg, ndcg, P, recall, map, recip_rank,
-- success, ndcg_min, ndcg_max, tie_sensitive_queries): queries is how many were averaged; k
-- is null for the whole ranking; a measure null in every row of per_query is null. A query
-- with a null ndcg (empty_ideal = 'skip') is left out of every mean and of the count (the
-- companion measures' too); a NaN ndcg (empty_ideal = 'nan') is kept and makes the ndcg
-- mean NaN. With tie bounds (tie_bounds true in per_query.sql): the means of ndcg_min and
-- ndcg_max, and tie_sensitive_queries, how many of the averaged queries an order of their ties could
-- score differently (ndcg_max - ndcg_min > 1e-12); all three are null without tie bounds.

create or replace temp view summary as
with

-- a query whose ndcg is null (empty_ideal 'skip') is left out of every mean and of the count
kept as (
    select per_query.*
    from per_query
    where per_query.ndcg is not null
),

-- Running sums in query order, read off at the last query: means with the same bits on
-- every run, which a parallel avg() in arbitrary row order does not give.
cumulative as (
    select
        kept.k,
        row_number() over running as position,
        count(*) over (partition by kept.k) as queries,
        -- every measure (and the tie bounds), each named as its column
        sum(columns(kept.* exclude (query_id, k, ties_straddle_k))) over running,  -- noqa: RF03
        sum(
            case
                when kept.ndcg_max - kept.ndcg_min > 1e-12 then cast(1 as bigint)
                when kept.ndcg_min is not null then cast(0 as bigint)
            end
        ) over running as tie_sensitive_queries
    from kept
    window running as (
        partition by kept.k
        order by kept.query_id
        rows between unbounded preceding and current row
    )
),

totals as (
    select cumulative.*
    from cumulative
    where cumulative.position = cumulative.queries
),

cutoffs as (
    select distinct per_query.k from per_query
),

final as (
    select
        cutoffs.k,
        coalesce(totals.queries, 0) as queries,
        columns(totals.* exclude (k, position, queries, tie_sensitive_queries)) / totals.queries,  -- noqa: RF02
        cast(totals.tie_sensitive_queries as bigint) as tie_sensitive_queries
    from cutoffs
    left join totals on totals.k is not distinct from cutoffs.k
)

select * from final
order by k nulls first;
