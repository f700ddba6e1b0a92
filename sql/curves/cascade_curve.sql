-- cascade_curve.sql: per query and cutoff, the sum ERR (expected reciprocal rank) reads.
--
-- Reads: views signals (sql/counters/signals.sql: the ranks with the signal judged, each with
-- its label) and cutoffs (sql/ranking/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE curves = ['cascade_curve']; -- the curves the asked measures read (the registry's)
--   SET VARIABLE err_max_grade = 4;          -- g_max of ERR (unset: 4, gdeval's)
--
-- Creates: view cascade_curve (query_id, k, err_sum), one row per query and cutoff with a graded
-- result at or above k (k null: the whole ranking) when `curves` names it (else no row):
-- err_sum is the registry's ERR, the sum over the ranks i <= k of R(i) / i times the chance
-- that the reader reaches rank i, (1 - R(1)) * ... * (1 - R(i - 1)), with
-- R(g) = (2^g - 1) / 2^g_max for a label g > 0 of the ranking by score (gdeval.pl's err).
-- A rank labelled 0, below 0 or not judged stops no reader: it adds nothing and leaves the
-- chance of reaching the next rank as it is, so only the graded ranks are read. A label above
-- g_max has no stop chance: err_sum is NaN at every cutoff at or below its rank.
-- Every sum runs in rank order, so a rerun gives the same bits (a parallel sum() does not).

create or replace temp view cascade_curve as
with

stops as (
    select
        s.query_id,
        s.rank,
        -- a label above g_max has no stop chance (R would pass 1): NaN, from its rank down
        case
            when s.label > coalesce(getvariable('err_max_grade'), 4) then cast('NaN' as double)
            else (power(2.0, s.label) - 1.0) / power(2.0, coalesce(getvariable('err_max_grade'), 4))
        end as stop_chance
    from signals as s
    where
        s.source = 'ranking'
        and s.ranking = 'retrieved'
        and s.label > 0
        and list_contains(getvariable('curves'), 'cascade_curve')
),

-- the chance that the reader gets to each graded rank: no stop above it
reached as (
    select
        stops.*,
        coalesce(
            product(1.0 - stops.stop_chance) over (
                partition by stops.query_id
                order by stops.rank asc
                rows between unbounded preceding and 1 preceding
            ),
            1.0
        ) as reach
    from stops
),

final as (
    select
        reached.query_id,
        cutoffs.k,
        sum(reached.stop_chance * reached.reach / reached.rank order by reached.rank asc) as err_sum
    from reached
    cross join cutoffs
    where cutoffs.k is null or reached.rank <= cutoffs.k
    group by reached.query_id, cutoffs.k
)

select * from final;
