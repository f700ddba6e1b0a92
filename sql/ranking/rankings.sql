-- rankings.sql: the ranks that earn something, of the retrieved orderings and of the ideal, discounted.
--
-- Reads: views retrieved (sql/ranking/retrieved.sql) and ideal (sql/ranking/ideal.sql).
--
-- Variables:
--   SET VARIABLE signals = ['relevant'];     -- some: the judged ranks of the ranking by score are kept
--   SET VARIABLE discount = 'log2';          -- 1/log2(rank+1); or 'jk': 1/max(1, log_b(rank))
--   SET VARIABLE log_base = 2;               -- b of the 'jk' discount
--
-- Creates: view rankings (ranking, query_id, rank, credited_gain, discounted_gain, label):
-- ranking is an ordering of retrieved ('retrieved', 'worst', 'best') or 'ideal'; discounted_gain
-- is credited_gain times the discount of the rank. A rank that earns 0 is left out: it adds
-- exactly 0 to every sum; unless signals are asked and it is a judged rank of the ranking by
-- score (its label decides its signals, sql/counters/signals.sql; label is null in every other
-- ranking).

create or replace temp view rankings as
with

kept as (
    select
        ranks.ordering as ranking,
        ranks.query_id,
        ranks.rank,
        ranks.credited_gain,
        case when ranks.ordering = 'retrieved' then ranks.label end as label
    from retrieved as ranks
    where
        ranks.credited_gain <> 0
        or (array_length(getvariable('signals')) > 0 and ranks.ordering = 'retrieved' and ranks.label is not null)
    union all
    select
        'ideal' as ranking,
        ideal.query_id,
        ideal.rank,
        ideal.credited_gain,
        cast(null as double) as label
    from ideal
),

final as (
    select
        kept.ranking,
        kept.query_id,
        kept.rank,
        kept.credited_gain,
        kept.credited_gain * case
            when coalesce(getvariable('discount'), 'log2') = 'jk'
                then 1.0 / greatest(1.0, ln(kept.rank) / ln(cast(coalesce(getvariable('log_base'), 2.0) as double)))
            else 1.0 / (ln(kept.rank + 1.0) / ln(2.0))
        end as discounted_gain,
        kept.label
    from kept
)

select * from final;
