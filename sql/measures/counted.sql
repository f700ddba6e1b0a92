-- counted.sql: every evaluated query at each ordering and cutoff, with the sums and counters its
-- measures read.
--
-- Reads: views counters (sql/counters/counters.sql), cutoffs (sql/ranking/cutoffs.sql),
-- sums_at_cutoffs (sql/counters/sums_at_cutoffs.sql), relevance_curve, gain_curve, cascade_curve,
-- intent_curve, user_model_curve, nerr_curve, target_curve, bpm_curve, compat_curve,
-- weighted_ap_curve and threshold_curve (sql/curves/).
--
-- Variables:
--   SET VARIABLE tie_bounds = true;          -- also the orderings 'worst' and 'best'
--
-- Creates: view counted (ordering, query_id, k, cg, dcg and the rank counters of sums_at_cutoffs,
-- idcg, then the per-query counters of sql/counters/counters.sql, the sums of relevance_curve,
-- gain_curve, target_curve, compat_curve and threshold_curve, and of the ordering 'retrieved'
-- cascade_curve's, intent_curve's, user_model_curve's, nerr_curve's, bpm_curve's and
-- weighted_ap_curve's at each cutoff, null where they have no row): ordering is 'retrieved' (with
-- tie_bounds also 'worst', 'best'); a sum or rank counter is null where nothing at or above k earns
-- or is counted; idcg is the ideal ranking's dcg.

create or replace temp view counted as
with

-- read twice below (the run's sums and the ideal's): one CTE, computed once
sums as (
    select * from sums_at_cutoffs
),

orderings as (
    select 'retrieved' as ordering
    union all
    select 'worst' as ordering
    where coalesce(getvariable('tie_bounds'), false)
    union all
    select 'best' as ordering
    where coalesce(getvariable('tie_bounds'), false)
),

final as (
    select
        orderings.ordering,
        counters.query_id,
        cutoffs.k,
        ranked.* exclude (ranking, query_id, k),  -- noqa: RF02
        ideal.dcg as idcg,
        counters.* exclude (query_id),  -- noqa: RF02
        relevance_curve.* exclude (query_id),  -- noqa: RF02
        gain_curve.* exclude (query_id),  -- noqa: RF02
        target_curve.* exclude (query_id),  -- noqa: RF02
        compat_curve.compat_value,
        threshold_curve.* exclude (query_id),  -- noqa: RF02
        cascade_curve.err_sum,
        intent_curve.* exclude (query_id, k),  -- noqa: RF02
        user_model_curve.sdcg_value,
        nerr_curve.* exclude (query_id, k),  -- noqa: RF02
        bpm_curve.bpm_value,
        weighted_ap_curve.* exclude (query_id, k)  -- noqa: RF02
    from counters
    left join relevance_curve on counters.query_id = relevance_curve.query_id
    left join gain_curve on counters.query_id = gain_curve.query_id
    left join target_curve on counters.query_id = target_curve.query_id
    left join compat_curve on counters.query_id = compat_curve.query_id
    left join threshold_curve on counters.query_id = threshold_curve.query_id
    cross join cutoffs
    cross join orderings
    left join sums as ranked
        on orderings.ordering = ranked.ranking
        and counters.query_id = ranked.query_id
        and cutoffs.k is not distinct from ranked.k
    left join sums as ideal
        on ideal.ranking = 'ideal'
        and counters.query_id = ideal.query_id
        and cutoffs.k is not distinct from ideal.k
    left join cascade_curve
        on orderings.ordering = 'retrieved'
        and counters.query_id = cascade_curve.query_id
        and cutoffs.k is not distinct from cascade_curve.k
    left join intent_curve
        on orderings.ordering = 'retrieved'
        and counters.query_id = intent_curve.query_id
        and cutoffs.k is not distinct from intent_curve.k
    left join user_model_curve
        on orderings.ordering = 'retrieved'
        and counters.query_id = user_model_curve.query_id
        and cutoffs.k is not distinct from user_model_curve.k
    left join nerr_curve
        on orderings.ordering = 'retrieved'
        and counters.query_id = nerr_curve.query_id
        and cutoffs.k is not distinct from nerr_curve.k
    left join bpm_curve
        on orderings.ordering = 'retrieved'
        and counters.query_id = bpm_curve.query_id
        and cutoffs.k is not distinct from bpm_curve.k
    left join weighted_ap_curve
        on orderings.ordering = 'retrieved'
        and counters.query_id = weighted_ap_curve.query_id
        and cutoffs.k is not distinct from weighted_ap_curve.k
)

select * from final;
