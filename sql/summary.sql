-- summary.sql: the mean of each measure over the evaluated queries, per cutoff.
--
-- Input: view per_query (from sql/per_query.sql).
-- Variables: none.
--
-- Creates: view summary (k, queries, cg, dcg, idcg, ndcg): queries is how many were
-- averaged; k is null for the whole ranking. A query with a null ndcg (empty_ideal = 'skip')
-- is left out of every mean and of the count; a NaN ndcg (empty_ideal = 'nan') is kept and
-- makes the ndcg mean NaN.

create or replace temp view summary as
with

final as (
    select
        per_query.k,
        count(per_query.ndcg) as queries,
        avg(case when per_query.ndcg is not null then per_query.cg end) as cg,
        avg(case when per_query.ndcg is not null then per_query.dcg end) as dcg,
        avg(case when per_query.ndcg is not null then per_query.idcg end) as idcg,
        avg(per_query.ndcg) as ndcg
    from per_query
    group by per_query.k
)

select * from final
order by k nulls first;
