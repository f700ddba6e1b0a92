-- gain_measures.sql: trec_eval's G, Rndcg and ndcg_rel, and rank-biased precision, one formula each.
--
-- Reads: view curve_measures (sql/measures/curve_measures.sql), with sql/curves/gain_curve.sql's sums.
--
-- Variables:
--   SET VARIABLE measures = ['G', 'Rndcg', 'ndcg_rel', 'rbp'];
--   SET VARIABLE empty_ideal = 'zero';       -- G, Rndcg, ndcg_rel of an empty ideal, as ndcg's
--   SET VARIABLE rbp_persistence = 0.9;      -- p of rank-biased precision (unset: 0.9)
--   SET VARIABLE rbp_gain = 'scaled';        -- rbp's gain over max(1, largest judged gain) (unset: 'scaled'),
--                                            -- or 'unscaled': the gain itself
--
-- Creates: view gain_measures (the columns of curve_measures, then G, Rndcg, ndcg_rel, rbp,
-- rbp_resid), the registry's formulas, of the whole ranking only (null at a cutoff), each
-- null unless `measures` names its family. M is ideal_length; a query whose ideal holds no
-- positive gain scores G, Rndcg and ndcg_rel as its ndcg (sql/measures/measures.sql); Rndcg is
-- otherwise 0 when R is 0 (m_Rndcg.c: a threshold above every positive label).

create or replace temp view gain_measures as
with

whole as (
    select
        curve_measures.*,
        curve_measures.k is null and list_contains(getvariable('measures'), 'G') as g_asked,
        curve_measures.k is null and list_contains(getvariable('measures'), 'Rndcg') as rndcg_asked,
        curve_measures.k is null and list_contains(getvariable('measures'), 'ndcg_rel') as ndcg_rel_asked,
        curve_measures.k is null and list_contains(getvariable('measures'), 'rbp') as rbp_asked,
        coalesce(curve_measures.idcg, 0.0) > 0 as ideal_gains,
        coalesce(curve_measures.dcg, 0.0) / nullif(curve_measures.idcg, 0) as whole_ndcg,
        coalesce(curve_measures.ideal_length, 0) as m,
        case
            when getvariable('empty_ideal') = 'one' then 1.0
            when getvariable('empty_ideal') = 'nan' then cast('NaN' as double)
            when getvariable('empty_ideal') = 'skip' then cast(null as double)
            else 0.0
        end as empty_ideal_score
    from curve_measures
),

-- trec_eval's m_Rndcg.c adds the whole ranking's NDCG to its points from n = M + 2 on
gains as (
    select
        whole.*,
        cast(coalesce(whole.retrieved_in_ranking, 0) >= whole.m + 2 as double) as past_ideal,
        coalesce(whole.ndcg_rel_sum, 0.0) + (whole.m - coalesce(whole.positive_ranks, 0)) * whole.whole_ndcg as rel_sum
    from whole
),

final as (
    select
        w.* exclude (  -- noqa: RF02
            g_asked, rndcg_asked, ndcg_rel_asked, rbp_asked, ideal_gains, whole_ndcg, m,  -- noqa: RF03
            empty_ideal_score, past_ideal, rel_sum  -- noqa: RF03
        ),
        case
            when not w.g_asked then cast(null as double)
            when not w.ideal_gains then w.empty_ideal_score
            else coalesce(w.g_sum, 0.0) / w.ideal_gain
        end as "G",
        case
            when not w.rndcg_asked then cast(null as double)
            when not w.ideal_gains then w.empty_ideal_score
            when coalesce(w.relevant_in_qrels, 0) = 0 then 0.0
            else
                (coalesce(w.rndcg_sum, 0.0) + w.past_ideal * w.whole_ndcg)
                / (coalesce(w.rndcg_points, 0) + w.past_ideal)
        end as "Rndcg",
        case
            when not w.ndcg_rel_asked then cast(null as double)
            when not w.ideal_gains then w.empty_ideal_score
            when w.rel_sum > 0 then w.rel_sum / w.m
            else 0.0
        end as ndcg_rel,
        case
            when w.rbp_asked
                then
                    (1.0 - cast(coalesce(getvariable('rbp_persistence'), 0.9) as double)) * coalesce(w.rbp_sum, 0.0)
                    -- rbp_gain: trec_eval's scaling keeps rbp in [0, 1]; ranx and trectools credit the gain itself
                    / case
                        when coalesce(getvariable('rbp_gain'), 'scaled') = 'scaled'
                            then greatest(coalesce(w.largest_gain, 0.0), 1.0)
                        else 1.0
                    end
        end as rbp,
        -- 1 - (the weight of the judged ranks): the unjudged ranks' and the tail's, p^n; never
        -- below 0 by a rounding of 1 - (1 - p^n)
        case
            when w.rbp_asked
                then greatest(
                    1.0
                    - (1.0 - cast(coalesce(getvariable('rbp_persistence'), 0.9) as double))
                    * coalesce(w.judged_weight, 0.0),
                    0.0
                )
        end as rbp_resid
    from gains as w
)

select * from final;
