-- sums_at_cutoffs.sql: the running sums and counts of every partition, at every cutoff.
--
-- Reads: views running_sums (sql/counters/running_sums.sql) and cutoffs (sql/ranking/cutoffs.sql).
--
-- Variables: none.
--
-- Creates: view sums_at_cutoffs (ranking, query_id, signal, k, then cg, dcg, found, first_rank,
-- precision_sum of running_sums): those of the partition's last row at or above k. A partition
-- without such a row has no row at k: nothing at or above k earns or holds its signal.

create or replace temp view sums_at_cutoffs as
with

final as (
    select
        running_sums.ranking,
        running_sums.query_id,
        running_sums.signal,
        cutoffs.k,
        running_sums.* exclude (ranking, query_id, signal, rank, next_rank)  -- noqa: RF02
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
