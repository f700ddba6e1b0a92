-- bpm_curve.sql: per query and cutoff, cwl_eval's BPM (the Bejeweled Player Model of Zhang et
-- al., SIGIR 2017, in its static form), ir_measures' BPM(T=...)@k.
--
-- Reads: views cwl_gains (sql/curves/cwl_gains.sql: the ranks of positive gain) and cutoffs
-- (sql/ranking/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE curves = ['bpm_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE cwl_target = 1;          -- T, the gain the reader seeks (unset: 1, ir_measures')
--
-- Creates: view bpm_curve (query_id, k, bpm_value), one row per query and cutoff k (not the whole
-- ranking) with a rank of positive gain read when `curves` names it (else no row). The reader
-- reads the first m = min(k, s, 1000) positions, s the first rank whose gain at or above it, G(s),
-- reaches T (none: 1000), each with weight 1 / m: BPM@k is the gain of the ranks i <= m over m.
-- G(s) >= T is decided on G added in rank order, the bits of cwl_eval's cumulative sum: a
-- window's sum, added in another order (within 1e-9 over 1000 gains of at most 1), only picks the
-- ranks near T, whose G is then added in order.

create or replace temp view bpm_curve as
with

settings as (
    select cast(coalesce(getvariable('cwl_target'), 1.0) as double) as wanted
),

gains as (
    select cwl_gains.*
    from cwl_gains
    where list_contains(getvariable('curves'), 'bpm_curve')
),

-- the gain above each rank of positive gain and at or above it, added in any order
near as (
    select
        gains.*,
        sum(gains.gain) over (
            partition by gains.query_id order by gains.rank asc rows between unbounded preceding and current row
        ) as gained_about
    from gains
),

-- the ranks where G may first reach T: at or above them within 1e-6 of T, above them short of it
crossings as (
    select
        near.query_id,
        near.rank
    from near
    cross join settings
    where near.gained_about >= settings.wanted - 1e-6 and near.gained_about - near.gain < settings.wanted + 1e-6
),

-- s of each query whose G reaches T, G added in rank order
stops as (
    select
        crossed.query_id,
        min(crossed.rank) as stop_rank
    from (
        select
            crossings.query_id,
            crossings.rank,
            sum(gains.gain order by gains.rank asc) as gained
        from crossings
        inner join gains on crossings.query_id = gains.query_id and crossings.rank >= gains.rank
        group by crossings.query_id, crossings.rank
    ) as crossed
    cross join settings
    where crossed.gained >= settings.wanted
    group by crossed.query_id
),

final as (
    select
        gains.query_id,
        cutoffs.k,
        sum(gains.gain order by gains.rank asc) / max(least(cutoffs.k, coalesce(stops.stop_rank, 1000), 1000))
            as bpm_value
    from gains
    left join stops on gains.query_id = stops.query_id
    inner join cutoffs
        on cutoffs.k is not null and gains.rank <= least(cutoffs.k, coalesce(stops.stop_rank, 1000))
    group by gains.query_id, cutoffs.k
)

select * from final;
