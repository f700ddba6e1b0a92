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
        sum(kept.cg) over running as cg,
        sum(kept.dcg) over running as dcg,
        sum(kept.idcg) over running as idcg,
        sum(kept.ndcg) over running as ndcg,
        sum(kept."P") over running as "P",
        sum(kept.recall) over running as recall,
        sum(kept.map) over running as map,
        sum(kept.recip_rank) over running as recip_rank,
        sum(kept.success) over running as success,
        sum(kept.ndcg_min) over running as ndcg_min,
        sum(kept.ndcg_max) over running as ndcg_max,
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
        totals.cg / totals.queries as cg,
        totals.dcg / totals.queries as dcg,
        totals.idcg / totals.queries as idcg,
        totals.ndcg / totals.queries as ndcg,
        totals."P" / totals.queries as "P",
        totals.recall / totals.queries as recall,
        totals.map / totals.queries as map,
        totals.recip_rank / totals.queries as recip_rank,
        totals.success / totals.queries as success,
        totals.ndcg_min / totals.queries as ndcg_min,
        totals.ndcg_max / totals.queries as ndcg_max,
        cast(totals.tie_sensitive_queries as bigint) as tie_sensitive_queries
    from cutoffs
    left join totals on totals.k is not distinct from cutoffs.k
)

select * from final
order by k nulls first;
