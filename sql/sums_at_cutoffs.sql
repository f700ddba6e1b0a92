-- sums_at_cutoffs.sql: CG and DCG of every ranking of a query, at every cutoff.
--
-- Step 9 of the per-query table.
-- Reads: views rankings (sql/rankings.sql) and cutoffs (sql/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE discount = 'log2';          -- 1/log2(rank+1); or 'jk': 1/max(1, log_b(rank))
--   SET VARIABLE log_base = 2;               -- b of the 'jk' discount
--
-- Creates: view sums_at_cutoffs (ranking, query_id, k, cg, dcg, found, precision_sum,
-- first_rank): ranking is 'retrieved', 'worst', 'best' or 'ideal'. A query, ranking and
-- cutoff without a row sums to 0: nothing at or above k earns. For the companion measures
-- (sql/companions.sql): found, the relevant ranks at or above k; precision_sum, the sum of
-- found_i / i over them; first_rank, the first relevant rank.

create or replace temp view sums_at_cutoffs as
with

discounted as (
    select
        rankings.*,
        rankings.credited_gain * case
            when coalesce(getvariable('discount'), 'log2') = 'jk'
                then 1.0 / greatest(1.0, ln(rankings.rank) / ln(coalesce(getvariable('log_base'), 2.0)))
            else 1.0 / (ln(rankings.rank + 1.0) / ln(2.0))
        end as discounted_gain
    from rankings
),

-- Running sums in rank order: the same bits on every run, which a parallel sum() in
-- arbitrary row order does not give. next_rank says up to which cutoff each sum holds; found
-- counts the relevant ranks so far, first_rank is the first of them.
cumulative as (
    select
        discounted.ranking,
        discounted.query_id,
        discounted.rank,
        lead(discounted.rank) over in_rank_order as next_rank,
        sum(discounted.credited_gain) over running as cg,
        sum(discounted.discounted_gain) over running as dcg,
        sum(case when discounted.relevant then 1 else 0 end) over running as found,
        min(case when discounted.relevant then discounted.rank end) over running as first_rank,
        discounted.relevant
    from discounted
    window
        in_rank_order as (partition by discounted.ranking, discounted.query_id order by discounted.rank),
        running as (
            partition by discounted.ranking, discounted.query_id
            order by discounted.rank
            rows between unbounded preceding and current row
        )
),

-- the precision at each relevant rank (found / rank), summed in rank order (AP's numerator):
-- a second window over the first, one chain, so Spark plans cumulative once
counted as (
    select
        cumulative.*,
        sum(case when cumulative.relevant then cumulative.found / cumulative.rank else 0.0 end) over (
            partition by cumulative.ranking, cumulative.query_id
            order by cumulative.rank
            rows between unbounded preceding and current row
        ) as precision_sum
    from cumulative
),

-- the sums at cutoff k are those of the last earning (or relevant) rank at or above k
final as (
    select
        counted.ranking,
        counted.query_id,
        cutoffs.k,
        counted.cg,
        counted.dcg,
        counted.found,
        counted.precision_sum,
        counted.first_rank
    from counted
    cross join cutoffs
    where
        (cutoffs.k is null and counted.next_rank is null)
        or (
            cutoffs.k is not null
            and counted.rank <= cutoffs.k
            and (counted.next_rank is null or counted.next_rank > cutoffs.k)
        )
)

select * from final;
