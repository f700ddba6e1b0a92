-- summary.sql: the mean of each measure over the evaluated queries, per cutoff.
--
-- Input: view per_query (from sql/per_query.sql).
-- Variables: none.
--
-- Creates: view summary (k, queries, cg, dcg, idcg, ndcg): queries is how many were
-- averaged; k is null for the whole ranking.

create or replace temp view summary as
with

final as (
    select
        per_query.k,
        count(*) as queries,
        avg(per_query.cg) as cg,
        avg(per_query.dcg) as dcg,
        avg(per_query.idcg) as idcg,
        avg(per_query.ndcg) as ndcg
    from per_query
    group by per_query.k
)

select * from final
order by k nulls first;
