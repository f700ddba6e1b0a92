-- rankings.sql: the ranks that earn something, of the retrieved orderings and of the ideal.
--
-- Convention 3 of sql/measures/per_query.sql. Reads: views retrieved (sql/ranking/retrieved.sql)
-- and judgments (sql/ranking/judgments.sql).
--
-- Variables:
--   SET VARIABLE ideal = 'judged';           -- or 'retrieved' or 'judged-cut-at-hits'
--   SET VARIABLE signals = [{'name': 'judged', 'low': 0.0, 'low_closed': true, 'high': NULL, 'high_closed': false}];
--                                            -- set: the judged ranks of the ranking by score are kept
--
-- Creates: view rankings (ranking, query_id, rank, credited_gain, label): ranking is an
-- ordering of retrieved ('retrieved', 'worst', 'best') or 'ideal'. The ideal ranking is the
-- positive gains of every judged document ('judged'), of the ranked documents ('retrieved'), or
-- of every judged document cut at the number of results ('judged-cut-at-hits'), in descending
-- order. A rank that earns 0 is left out: it adds exactly 0 to every sum; unless signals are
-- asked and it is a judged rank of the ranking by score (its label decides its signals,
-- sql/counters/signals.sql; label is null in every other ranking).

create or replace temp view rankings as
with

-- read twice below (the ideal's counts and gains, and the rankings): one CTE, computed once
ranks as (
    select * from retrieved
),

as_ranked as (
    select ranks.*
    from ranks
    where ranks.ordering = 'retrieved'
),

hits as (
    select as_ranked.query_id, count(*) as hits
    from as_ranked
    where getvariable('ideal') = 'judged-cut-at-hits'
    group by as_ranked.query_id
),

ideal_gains as (
    select judgments.query_id, judgments.gain
    from judgments
    where judgments.gain > 0 and coalesce(getvariable('ideal'), 'judged') <> 'retrieved'
    union all
    select as_ranked.query_id, as_ranked.gain
    from as_ranked
    where as_ranked.gain > 0 and getvariable('ideal') = 'retrieved'
),

ideal_ranked as (
    select
        ideal_gains.query_id,
        row_number() over (partition by ideal_gains.query_id order by ideal_gains.gain desc) as rank,
        ideal_gains.gain
    from ideal_gains
),

ideal as (
    select ideal_ranked.query_id, ideal_ranked.rank, ideal_ranked.gain as credited_gain
    from ideal_ranked
    left join hits on ideal_ranked.query_id = hits.query_id
    where
        getvariable('ideal') is distinct from 'judged-cut-at-hits'
        or ideal_ranked.rank <= coalesce(hits.hits, 0)
),

final as (
    select
        ranks.ordering as ranking,
        ranks.query_id,
        ranks.rank,
        ranks.credited_gain,
        case when ranks.ordering = 'retrieved' then ranks.label end as label
    from ranks
    where
        ranks.credited_gain <> 0
        or (getvariable('signals') is not null and ranks.ordering = 'retrieved' and ranks.label is not null)
    union all
    select
        'ideal' as ranking,
        ideal.query_id,
        ideal.rank,
        ideal.credited_gain,
        cast(null as double) as label
    from ideal
)

select * from final;
