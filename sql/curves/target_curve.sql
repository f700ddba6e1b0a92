-- target_curve.sql: per query, cwl_eval's INST and INSQ (Moffat et al., ADCS 2015): a reader who
-- reads on until a target gain T is met.
--
-- Reads: views signals (sql/counters/signals.sql: the ranks with the signal judged, each with
-- its label).
--
-- Variables:
--   SET VARIABLE curves = ['target_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE cwl_min_rel = 0;            -- the scale's lowest label (unset: 0, ir_measures')
--   SET VARIABLE cwl_max_rel = 3;            -- the scale's highest label (unset: 4)
--   SET VARIABLE cwl_target = 1;             -- T, the gain the reader seeks (unset: 1, ir_measures')
--
-- Creates: view target_curve (query_id, inst_value, insq_value), one row per query with a rank
-- i <= 1000 of positive gain when `curves` names it (else no row). Over the positions 1 to 1000
-- (cwl_eval's depth; past the ranking or unjudged: gain 0), gain(i) as user_model_curve.sql's and
-- G(i) the gain at or above i, the reader goes on from i with c(i) = ((i + a - 1) / (i + a))^2,
-- a = 2T - G(i) (INST) or 2T (INSQ), reaches i with P(i) = c(1) * ... * c(i - 1): the value is
-- the sum of P(i) * gain(i) over the sum of P(i). P is exp of a sum of logarithms: Spark has no
-- product aggregate (cwl_target > 0.5 keeps every c > 0).

create or replace temp view target_curve as
with

scale as (
    select
        coalesce(getvariable('cwl_min_rel'), 0.0) as low,
        coalesce(getvariable('cwl_max_rel'), 4.0) as high,
        coalesce(getvariable('cwl_target'), 1.0) as wanted
),

gains as (
    select
        s.query_id,
        s.rank,
        (least(s.label, scale.high) - scale.low) / (scale.high - scale.low) as gain
    from signals as s
    cross join scale
    where
        s.source = 'ranking'
        and s.ranking = 'retrieved'
        and s.rank <= 1000
        and s.label > scale.low
        and list_contains(getvariable('curves'), 'target_curve')
),

positions as (
    select unnest(range(1, 1001)) as i
),

-- every position of each query with a gain, its gain (0 where none) and the gain at or above it
read as (
    select
        queries.query_id,
        positions.i,
        coalesce(ranked.gain, 0.0) as gain,
        sum(coalesce(ranked.gain, 0.0)) over (
            partition by queries.query_id order by positions.i asc rows between unbounded preceding and current row
        ) as gained
    from (select distinct gains.query_id from gains) as queries
    cross join positions
    left join gains as ranked on queries.query_id = ranked.query_id and positions.i = ranked.rank
),

chances as (
    select
        read.*,
        power((read.i + 2.0 * scale.wanted - read.gained - 1.0) / (read.i + 2.0 * scale.wanted - read.gained), 2)
            as inst_c,
        power((read.i + 2.0 * scale.wanted - 1.0) / (read.i + 2.0 * scale.wanted), 2) as insq_c
    from read
    cross join scale
),

-- P(i): exp of the sum of ln c over the positions above it (every c > 0: T > 0.5)
reached as (
    select
        chances.query_id,
        chances.i,
        chances.gain,
        exp(coalesce(sum(ln(chances.inst_c)) over (
            partition by chances.query_id order by chances.i asc rows between unbounded preceding and 1 preceding
        ), 0.0)) as inst_p,
        exp(coalesce(sum(ln(chances.insq_c)) over (
            partition by chances.query_id order by chances.i asc rows between unbounded preceding and 1 preceding
        ), 0.0)) as insq_p
    from chances
),

final as (
    select
        reached.query_id,
        sum(reached.inst_p * reached.gain order by reached.i asc) / sum(reached.inst_p order by reached.i asc)
            as inst_value,
        sum(reached.insq_p * reached.gain order by reached.i asc) / sum(reached.insq_p order by reached.i asc)
            as insq_value
    from reached
    group by reached.query_id
)

select * from final;
