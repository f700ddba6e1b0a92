-- target_curve.sql: per query, cwl_eval's measures read over its first 1000 positions: INST and
-- INSQ (Moffat et al., ADCS 2015), NERR10 and NERR11 (Azzopardi et al., ICTIR 2021).
--
-- Reads: view cwl_gains (sql/curves/cwl_gains.sql: the ranks of positive gain).
--
-- Variables:
--   SET VARIABLE curves = ['target_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE cwl_target = 1;             -- T, the gain the reader seeks (unset: 1, ir_measures')
--   SET VARIABLE rbp_persistence = 0.9;      -- NERR10's p (unset: 0.9, ir_measures' and ours)
--
-- Creates: view target_curve (query_id, inst_value, insq_value, nerr10_value, nerr11_value), one
-- row per query with a rank i <= 1000 of positive gain when `curves` names it (else no row). Over
-- the positions 1 to 1000 (past the ranking or unjudged: gain 0), G(i) the gain at or above i, the
-- reader goes on from i with c(i), reaches i with P(i) = c(1) * ... * c(i - 1), and the value is
-- the sum of P(i) * gain(i) over the sum of P(i): c(i) = ((i + a - 1) / (i + a))^2, a = 2T - G(i)
-- (INST) or 2T (INSQ); NERR10's p * (1 - gain(i)); NERR11's INSQ's c times (1 - gain(i)). P is exp
-- of a sum of logarithms, as Spark has no product aggregate (cwl_target > 0.5 keeps INST's c > 0);
-- 1 - gain is 0 at a gain of 1, so past one P is 0.

create or replace temp view target_curve as
with

settings as (
    select
        coalesce(getvariable('cwl_target'), 1.0) as wanted,
        coalesce(getvariable('rbp_persistence'), 0.9) as patience
),

gains as (
    select cwl_gains.*
    from cwl_gains
    where list_contains(getvariable('curves'), 'target_curve')
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
        power((read.i + 2.0 * settings.wanted - read.gained - 1.0) / (read.i + 2.0 * settings.wanted - read.gained), 2)
            as inst_c,
        power((read.i + 2.0 * settings.wanted - 1.0) / (read.i + 2.0 * settings.wanted), 2) as insq_c,
        -- the chance of no stop at i, as a logarithm where it is above 0, and where it is 0
        case when read.gain < 1.0 then ln(1.0 - read.gain) else 0.0 end as kept_ln,
        case when read.gain >= 1.0 then 1 else 0 end as stopped
    from read
    cross join settings
),

-- P(i): exp of the sum of ln c over the positions above it
reached as (
    select
        chances.query_id,
        chances.i,
        chances.gain,
        exp(coalesce(sum(ln(chances.inst_c)) over above, 0.0)) as inst_p,
        exp(coalesce(sum(ln(chances.insq_c)) over above, 0.0)) as insq_p,
        case
            when coalesce(sum(chances.stopped) over above, 0) > 0 then 0.0
            else exp(coalesce(sum(chances.kept_ln) over above, 0.0))
        end as kept
    from chances
    window above as (
        partition by chances.query_id order by chances.i asc rows between unbounded preceding and 1 preceding
    )
),

final as (
    select
        reached.query_id,
        sum(reached.inst_p * reached.gain order by reached.i asc) / sum(reached.inst_p order by reached.i asc)
            as inst_value,
        sum(reached.insq_p * reached.gain order by reached.i asc) / sum(reached.insq_p order by reached.i asc)
            as insq_value,
        sum(power(settings.patience, reached.i - 1) * reached.kept * reached.gain order by reached.i asc)
        / sum(power(settings.patience, reached.i - 1) * reached.kept order by reached.i asc) as nerr10_value,
        sum(reached.insq_p * reached.kept * reached.gain order by reached.i asc)
        / sum(reached.insq_p * reached.kept order by reached.i asc) as nerr11_value
    from reached
    cross join settings
    group by reached.query_id
)

select * from final;
