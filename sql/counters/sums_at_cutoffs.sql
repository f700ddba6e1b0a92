-- sums_at_cutoffs.sql: CG, DCG and the rank counters of every ranking of a query, at every cutoff.
--
-- Reads: views running_sums (sql/counters/running_sums.sql) and cutoffs (sql/ranking/cutoffs.sql).
--
-- Variables: none.
--
-- Creates: view sums_at_cutoffs (ranking, query_id, k, then the sums and counters of
-- running_sums): ranking is 'retrieved', 'worst', 'best' or 'ideal'. A query, ranking and
-- cutoff without a row sums to 0: nothing at or above k earns or is counted.

create or replace temp view sums_at_cutoffs as
with

-- the sums at cutoff k are those of the last kept rank at or above k
final as (
    select
        running_sums.ranking,
        running_sums.query_id,
        cutoffs.k,
        running_sums.* exclude (ranking, query_id, rank, next_rank)  -- noqa: RF02
    from running_sums
    cross join cutoffs
    where
        (cutoffs.k is null and running_sums.next_rank is null)
        or (
            cutoffs.k is not null
            and running_sums.rank <= cutoffs.k
            and (running_sums.next_rank is null or running_sums.next_rank > cutoffs.k)
        )
)

select * from final;
