-- curve_measures.sql: trec_eval's R-precision, interpolated precision, bpref, infAP, binG.
--
-- Reads: view set_measures (sql/measures/set_measures.sql), with sql/curves/relevance_curve.sql's sums.
--
-- Variables:
--   SET VARIABLE measures = ['Rprec', 'Rprec_mult', 'iprec_at_recall', 'bpref', 'infAP', 'binG'];
--
-- Creates: view curve_measures (the columns of set_measures, then rprec, rprec_mult_<x>,
-- iprec_at_recall_<r>, iprec_11pt_avg, bpref, gm_bpref, infap, binG), the registry's
-- formulas, of the whole ranking only (null at a cutoff), each null unless `measures` names
-- its family. R is relevant_in_qrels; a query without a relevant result scores 0.

create or replace temp view curve_measures as
with

whole as (
    select
        s.*,
        cast(s.relevant_in_qrels as double) as r,
        coalesce(s.relevant_found / nullif(cast(s.retrieved_in_ranking as double), 0), 0.0) as last_precision,
        s.k is null and list_contains(getvariable('measures'), 'Rprec') as rprec_asked,
        s.k is null and list_contains(getvariable('measures'), 'Rprec_mult') as mult_asked,
        s.k is null and list_contains(getvariable('measures'), 'iprec_at_recall') as iprec_asked,
        s.k is null and list_contains(getvariable('measures'), 'bpref') as bpref_asked,
        s.k is null and list_contains(getvariable('measures'), 'infAP') as infap_asked,
        s.k is null and list_contains(getvariable('measures'), 'binG') as bing_asked
    from set_measures as s
),

-- interpolated precision at recall r: the highest precision at or after the rank where the
-- relevant found reach floor(r * R + 0.9), the last rank's included; 0 if they never do
interpolated as (
    select
        whole.*,
        if(whole.iprec_max_0_00 is null, 0.0, greatest(whole.iprec_max_0_00, whole.last_precision)) as iprec_0_00,
        if(whole.iprec_max_0_10 is null, 0.0, greatest(whole.iprec_max_0_10, whole.last_precision)) as iprec_0_10,
        if(whole.iprec_max_0_20 is null, 0.0, greatest(whole.iprec_max_0_20, whole.last_precision)) as iprec_0_20,
        if(whole.iprec_max_0_30 is null, 0.0, greatest(whole.iprec_max_0_30, whole.last_precision)) as iprec_0_30,
        if(whole.iprec_max_0_40 is null, 0.0, greatest(whole.iprec_max_0_40, whole.last_precision)) as iprec_0_40,
        if(whole.iprec_max_0_50 is null, 0.0, greatest(whole.iprec_max_0_50, whole.last_precision)) as iprec_0_50,
        if(whole.iprec_max_0_60 is null, 0.0, greatest(whole.iprec_max_0_60, whole.last_precision)) as iprec_0_60,
        if(whole.iprec_max_0_70 is null, 0.0, greatest(whole.iprec_max_0_70, whole.last_precision)) as iprec_0_70,
        if(whole.iprec_max_0_80 is null, 0.0, greatest(whole.iprec_max_0_80, whole.last_precision)) as iprec_0_80,
        if(whole.iprec_max_0_90 is null, 0.0, greatest(whole.iprec_max_0_90, whole.last_precision)) as iprec_0_90,
        if(whole.iprec_max_1_00 is null, 0.0, greatest(whole.iprec_max_1_00, whole.last_precision)) as iprec_1_00
    from whole
),

final as (
    select
        w.* exclude (  -- noqa: RF02
            r, last_precision, rprec_asked, mult_asked, iprec_asked, bpref_asked, infap_asked, bing_asked  -- noqa: RF03
        ),
        case when w.rprec_asked then coalesce(w.relevant_in_top_r / nullif(w.r, 0), 0.0) end as rprec,
        case when w.mult_asked then coalesce(w.relevant_in_top_0_20 / nullif(floor(0.20e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_0_20,
        case when w.mult_asked then coalesce(w.relevant_in_top_0_40 / nullif(floor(0.40e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_0_40,
        case when w.mult_asked then coalesce(w.relevant_in_top_0_60 / nullif(floor(0.60e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_0_60,
        case when w.mult_asked then coalesce(w.relevant_in_top_0_80 / nullif(floor(0.80e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_0_80,
        case when w.mult_asked then coalesce(w.relevant_in_top_1_00 / nullif(floor(1.00e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_1_00,
        case when w.mult_asked then coalesce(w.relevant_in_top_1_20 / nullif(floor(1.20e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_1_20,
        case when w.mult_asked then coalesce(w.relevant_in_top_1_40 / nullif(floor(1.40e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_1_40,
        case when w.mult_asked then coalesce(w.relevant_in_top_1_60 / nullif(floor(1.60e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_1_60,
        case when w.mult_asked then coalesce(w.relevant_in_top_1_80 / nullif(floor(1.80e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_1_80,
        case when w.mult_asked then coalesce(w.relevant_in_top_2_00 / nullif(floor(2.00e0 * w.r + 0.9), 0), 0.0) end
            as rprec_mult_2_00,
        case when w.iprec_asked then w.iprec_0_00 end as iprec_at_recall_0_00,
        case when w.iprec_asked then w.iprec_0_10 end as iprec_at_recall_0_10,
        case when w.iprec_asked then w.iprec_0_20 end as iprec_at_recall_0_20,
        case when w.iprec_asked then w.iprec_0_30 end as iprec_at_recall_0_30,
        case when w.iprec_asked then w.iprec_0_40 end as iprec_at_recall_0_40,
        case when w.iprec_asked then w.iprec_0_50 end as iprec_at_recall_0_50,
        case when w.iprec_asked then w.iprec_0_60 end as iprec_at_recall_0_60,
        case when w.iprec_asked then w.iprec_0_70 end as iprec_at_recall_0_70,
        case when w.iprec_asked then w.iprec_0_80 end as iprec_at_recall_0_80,
        case when w.iprec_asked then w.iprec_0_90 end as iprec_at_recall_0_90,
        case when w.iprec_asked then w.iprec_1_00 end as iprec_at_recall_1_00,
        case
            when w.iprec_asked
                then (
                    w.iprec_0_00 + w.iprec_0_10 + w.iprec_0_20 + w.iprec_0_30 + w.iprec_0_40 + w.iprec_0_50
                    + w.iprec_0_60 + w.iprec_0_70 + w.iprec_0_80 + w.iprec_0_90 + w.iprec_1_00
                ) / 11.0
        end as iprec_11pt_avg,
        case when w.bpref_asked then coalesce(w.bpref_sum / nullif(w.r, 0), 0.0) end as bpref,
        case when w.bpref_asked then coalesce(w.bpref_sum / nullif(w.r, 0), 0.0) end as gm_bpref,
        case when w.infap_asked then coalesce(w.infap_sum / nullif(w.r, 0), 0.0) end as infap,
        case when w.bing_asked then coalesce(w.bing_sum / nullif(w.r, 0), 0.0) end as "binG"
    from interpolated as w
)

select * from final;
