-- intent_measures.sql: ndeval's intent-aware measures (strec, P_IA, ERR_IA, AP_IA, alpha_DCG,
-- NRBP, alpha_nDCG, nERR_IA, nNRBP), one formula each.
--
-- Reads: view top_k_measures (sql/measures/top_k_measures.sql), whose columns carry the sums of
-- sql/curves/intent_curve.sql (null where no result relevant to a subtopic is at or above k).
--
-- Variables:
--   SET VARIABLE measures = ['strec', 'P_IA', 'ERR_IA', 'AP_IA', 'alpha_DCG', 'NRBP', 'alpha_nDCG'];
--
-- Creates: view intent_measures (the columns of top_k_measures, then strec, P_IA, ERR_IA, AP_IA,
-- alpha_DCG, NRBP, alpha_nDCG, nERR_IA, nNRBP), the registry's formulas over S, intent_subtopics (S = 0, or no relevant
-- result at or above k: 0); each null unless `measures` names it. strec, P_IA, ERR_IA and
-- alpha_DCG are null over the whole ranking (k null), AP_IA and NRBP at every cutoff. ERR_IA and
-- alpha_DCG divide by ndeval's "ideal ideal", S * intent_err_norm and S * intent_dcg_norm, but
-- not at k = 1, where ndeval divides by nothing (its loop normalises from the second rank on).
-- NRBP scales by (1 - (1 - alpha) * beta) / S, alpha and beta ndeval's 0.5. alpha_nDCG, nERR_IA
-- and nNRBP divide the sums by the greedy ideal's (ndeval's collection-dependent normalisation;
-- null for the whole ranking, nNRBP at every cutoff).

create or replace temp view intent_measures as
with

final as (
    select
        c.*,
        case
            when list_contains(getvariable('measures'), 'strec') and c.k is not null
                then coalesce(cast(c.intent_covered as double) / nullif(c.intent_subtopics, 0), 0.0)
        end as strec,
        case
            when list_contains(getvariable('measures'), 'P_IA') and c.k is not null
                then coalesce(cast(c.intent_pairs as double) / nullif(c.k * c.intent_subtopics, 0), 0.0)
        end as "P_IA",
        case
            when list_contains(getvariable('measures'), 'ERR_IA') and c.k = 1 then coalesce(c.intent_err_sum, 0.0)
            when list_contains(getvariable('measures'), 'ERR_IA') and c.k is not null
                then coalesce(c.intent_err_sum / nullif(c.intent_subtopics * c.intent_err_norm, 0), 0.0)
        end as "ERR_IA",
        case
            when list_contains(getvariable('measures'), 'AP_IA') and c.k is null
                then coalesce(c.intent_ap_sum / nullif(c.intent_subtopics, 0), 0.0)
        end as "AP_IA",
        case
            when list_contains(getvariable('measures'), 'alpha_DCG') and c.k = 1 then coalesce(c.intent_dcg_sum, 0.0)
            when list_contains(getvariable('measures'), 'alpha_DCG') and c.k is not null
                then coalesce(c.intent_dcg_sum / nullif(c.intent_subtopics * c.intent_dcg_norm, 0), 0.0)
        end as "alpha_DCG",
        case
            when list_contains(getvariable('measures'), 'NRBP') and c.k is null
                then coalesce((1.0 - 0.5 * 0.5) * c.intent_nrbp_sum / nullif(c.intent_subtopics, 0), 0.0)
        end as "NRBP",
        case
            when list_contains(getvariable('measures'), 'alpha_nDCG') and c.k is not null
                then coalesce(c.intent_dcg_sum / nullif(c.intent_ideal_dcg, 0), 0.0)
        end as "alpha_nDCG",
        case
            when list_contains(getvariable('measures'), 'nERR_IA') and c.k is not null
                then coalesce(c.intent_err_sum / nullif(c.intent_ideal_err, 0), 0.0)
        end as "nERR_IA",
        case
            when list_contains(getvariable('measures'), 'nNRBP') and c.k is null
                then coalesce(c.intent_nrbp_sum / nullif(c.intent_ideal_nrbp, 0), 0.0)
        end as "nNRBP"
    from top_k_measures as c
)

select * from final;
