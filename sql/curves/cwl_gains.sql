-- cwl_gains.sql: the gain of each rank that the C/W/L measures of cwl_eval read, on the label
-- scale ir_measures' min_rel and max_rel name: one step, read by every C/W/L curve.
--
-- Reads: view signals (sql/counters/signals.sql: the ranks with the signal judged, each with
-- its label).
--
-- Variables:
--   SET VARIABLE curves = ['user_model_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE cwl_min_rel = 0;                -- the scale's lowest label (unset: 0, ir_measures')
--   SET VARIABLE cwl_max_rel = 3;                -- the scale's highest label (unset: 4)
--
-- Creates: view cwl_gains (query_id, rank, gain), one row per rank i <= 1000 (cwl_eval's depth,
-- its max_n) of the ranking by score with a positive gain, when `curves` names a C/W/L curve
-- (user_model_curve, nerr_curve, target_curve, bpm_curve; else no row): gain(i) =
-- (min(label, cwl_max_rel) - cwl_min_rel) / (cwl_max_rel - cwl_min_rel), in (0, 1], for a label
-- above cwl_min_rel (itself at least 0, so a label below 0 reads as 0, as ir_measures clips it).
-- A rank unjudged or labelled at or below cwl_min_rel gains 0: it has no row.

create or replace temp view cwl_gains as
with

-- the label scale: cwl_min_rel unset is 0, ir_measures' default; cwl_max_rel unset is 4
-- (ir_measures requires it)
scale as (
    select
        cast(coalesce(getvariable('cwl_min_rel'), 0.0) as double) as low,
        cast(coalesce(getvariable('cwl_max_rel'), 4.0) as double) as high
),

final as (
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
        and (
            list_contains(getvariable('curves'), 'user_model_curve')
            or list_contains(getvariable('curves'), 'nerr_curve')
            or list_contains(getvariable('curves'), 'target_curve')
            or list_contains(getvariable('curves'), 'bpm_curve')
        )
)

select * from final;
