-- running_sums.sql: in rank order, the running CG and DCG of each ranking, and the running
-- counts of each signal.
--
-- Reads: views rankings (sql/ranking/rankings.sql) and signals (sql/counters/signals.sql).
--
-- Variables:
--   SET VARIABLE discount = 'log2';          -- 1/log2(rank+1); or 'jk': 1/max(1, log_b(rank))
--   SET VARIABLE log_base = 2;               -- b of the 'jk' discount
--
-- Creates: view running_sums (ranking, query_id, signal, rank, next_rank, cg, dcg, found,
-- first_rank, precision_sum), one row per kept rank of each partition (ranking, query_id,
-- signal). signal null: a rank of `ranking` that earns something, with cg and dcg, the sums of
-- the gains up to it. Else a rank of the ranking by score where `signal` holds, with the
-- registry's accumulations of a signal (pipeline/registry/counters.py): found, the ranks up to
-- it where it holds; first_rank, the first of them; precision_sum, found_i / i summed over
-- them (null where it is not read). next_rank, the partition's next rank (null at its last),
-- says up to which cutoff the row's sums hold (sql/counters/sums_at_cutoffs.sql).

create or replace temp view running_sums as
with

-- Running sums in rank order: the same bits on every run, which a parallel sum() in
-- arbitrary row order does not give.
gains as (
    select
        r.ranking, r.query_id, cast(null as varchar) as signal, r.rank,
        lead(r.rank) over in_rank_order as next_rank,
        sum(r.credited_gain) over running as cg,
        sum(
            r.credited_gain * case
                when coalesce(getvariable('discount'), 'log2') = 'jk'
                    then 1.0 / greatest(1.0, ln(r.rank) / ln(coalesce(getvariable('log_base'), 2.0)))
                else 1.0 / (ln(r.rank + 1.0) / ln(2.0))
            end
        ) over running as dcg,
        cast(null as bigint) as found,
        cast(null as bigint) as first_rank,
        cast(null as double) as precision_sum
    from rankings as r
    window
        in_rank_order as (partition by r.ranking, r.query_id order by r.rank asc),
        running as (partition by r.ranking, r.query_id order by r.rank asc rows unbounded preceding)
),

-- one row per rank where a signal holds: its count so far is the row's number
counts as (
    select
        'retrieved' as ranking, s.query_id, s.signal, s.rank,
        lead(s.rank) over in_rank_order as next_rank,
        row_number() over in_rank_order as found,
        first_value(s.rank) over in_rank_order as first_rank,
        s.precision_summed
    from signals as s
    where s.source = 'ranking'
    window in_rank_order as (partition by s.query_id, s.signal order by s.rank asc)
),

-- found / rank summed in rank order (AP's numerator for relevant): a second pass over the first,
-- made only for the signals whose precision_sum is read
final as (
    select gains.* from gains
    union all
    select
        c.ranking, c.query_id, c.signal, c.rank, c.next_rank,
        cast(null as double) as cg,
        cast(null as double) as dcg,
        c.found,
        c.first_rank,
        cast(null as double) as precision_sum
    from counts as c
    where not c.precision_summed
    union all
    select
        c.ranking, c.query_id, c.signal, c.rank, c.next_rank,
        cast(null as double) as cg,
        cast(null as double) as dcg,
        c.found,
        c.first_rank,
        sum(c.found / c.rank) over (partition by c.query_id, c.signal order by c.rank asc rows unbounded preceding)
            as precision_sum
    from counts as c
    where c.precision_summed
)

select * from final;
