-- sums_at_cutoffs.sql: CG and DCG of every ranking of a query, at every cutoff.
--
-- Step 9 of the per-query table.
-- Reads: views rankings (sql/rankings.sql), companions (sql/companions.sql) and cutoffs
-- (sql/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE discount = 'log2';          -- 1/log2(rank+1); or 'jk': 1/max(1, log_b(rank))
--   SET VARIABLE log_base = 2;               -- b of the 'jk' discount
--
-- Creates: view sums_at_cutoffs (ranking, query_id, k, cg, dcg, found, precision_sum,
-- first_rank): ranking is 'retrieved', 'worst', 'best' or 'ideal'. A query, ranking and
-- cutoff without a row sums to 0: nothing at or above k earns. For the companion measures
-- (when sql/companions.sql has rows): found, the relevant ranks at or above k; precision_sum,
-- the sum of found_i / i over them; first_rank, the first relevant rank.

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
-- arbitrary row order does not give. next_rank says up to which cutoff each sum holds.
cumulative as (
    select
        discounted.ranking,
        discounted.query_id,
        discounted.rank,
        lead(discounted.rank) over in_rank_order as next_rank,
        sum(discounted.credited_gain) over running as cg,
        sum(discounted.discounted_gain) over running as dcg,
        sum(case when discounted.relevant then 1 else 0 end) over running as found,
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

-- the precision at each relevant rank, summed in rank order: only when a companion measure is
-- asked for (its queries are in companions), keyed by found, the relevant ranks so far
precisions as (
    select
        cumulative.ranking,
        cumulative.query_id,
        cumulative.rank,
        cumulative.found,
        sum(cumulative.found / cumulative.rank) over (
            partition by cumulative.ranking, cumulative.query_id
            order by cumulative.rank
            rows between unbounded preceding and current row
        ) as precision_sum
    from cumulative
    where cumulative.relevant and cumulative.query_id in (select companions.query_id from companions)
),

-- the sums at cutoff k are those of the last earning (or relevant) rank at or above k
final as (
    select
        cumulative.ranking,
        cumulative.query_id,
        cutoffs.k,
        cumulative.cg,
        cumulative.dcg,
        cumulative.found,
        precisions.precision_sum,
        firsts.rank as first_rank
    from cumulative
    cross join cutoffs
    left join precisions
        on cumulative.ranking = precisions.ranking
        and cumulative.query_id = precisions.query_id
        and cumulative.found = precisions.found
    left join precisions as firsts
        on cumulative.ranking = firsts.ranking and cumulative.query_id = firsts.query_id and firsts.found = 1
    where
        (cutoffs.k is null and cumulative.next_rank is null)
        or (
            cutoffs.k is not null
            and cumulative.rank <= cutoffs.k
            and (cumulative.next_rank is null or cumulative.next_rank > cutoffs.k)
        )
)

select * from final;
