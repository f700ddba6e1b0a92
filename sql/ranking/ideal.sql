-- ideal.sql: the ideal ranking of each query: its positive gains, best first, cut as the ideal says.
--
-- Convention 3 of sql/measures/per_query.sql. Reads: views retrieved (sql/ranking/retrieved.sql)
-- and judgments (sql/ranking/judgments.sql).
--
-- Variables:
--   SET VARIABLE ideal = 'judged';           -- or 'retrieved' or 'judged-cut-at-hits'
--
-- Creates: view ideal (query_id, rank, credited_gain): the positive gains of every judged
-- document ('judged'), of the ranked documents ('retrieved'), or of every judged document cut at
-- the number of results ('judged-cut-at-hits'), in descending order (equal gains in any order:
-- they sum alike).

create or replace temp view ideal as
with

as_ranked as (
    select retrieved.*
    from retrieved
    where retrieved.ordering = 'retrieved'
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

final as (
    select ideal_ranked.query_id, ideal_ranked.rank, ideal_ranked.gain as credited_gain
    from ideal_ranked
    left join hits on ideal_ranked.query_id = hits.query_id
    where
        getvariable('ideal') is distinct from 'judged-cut-at-hits'
        or ideal_ranked.rank <= coalesce(hits.hits, 0)
)

select * from final;
