-- summary.sql: the mean of each measure over the evaluated queries, per cutoff.
--
-- Input: view per_query (from sql/per_query.sql).
-- Variables: none.
--
-- Creates: view summary (k, queries, cg, dcg, idcg, ndcg): queries is how many were
-- averaged; k is null for the whole ranking.

create or replace temp view summary as
with

-- Running sums in query order, read off at the last query: means with the same bits on
-- every run, which a parallel avg() in arbitrary row order does not give.
cumulative as (
    select
        per_query.k,
        row_number() over running as position,
        count(*) over (partition by per_query.k) as queries,
        sum(per_query.cg) over running as cg,
        sum(per_query.dcg) over running as dcg,
        sum(per_query.idcg) over running as idcg,
        sum(per_query.ndcg) over running as ndcg
    from per_query
    window running as (
        partition by per_query.k
        order by per_query.query_id
        rows between unbounded preceding and current row
    )
),

final as (
    select
        cumulative.k,
        cumulative.queries,
        cumulative.cg / cumulative.queries as cg,
        cumulative.dcg / cumulative.queries as dcg,
        cumulative.idcg / cumulative.queries as idcg,
        cumulative.ndcg / cumulative.queries as ndcg
    from cumulative
    where cumulative.position = cumulative.queries
)

select * from final
order by k nulls first;
