-- top_k_measures.sql: the measures of the top k (P, recall, AP, RR, success, ...), one formula each.
--
-- Reads: view gain_measures (sql/measures/gain_measures.sql).
--
-- Variables:
--   SET VARIABLE precision_denominator = 'k';  -- P@k / k; or 'min-k-retrieved': / min(k, retrieved)
--   SET VARIABLE ap_denominator = 'relevant';  -- AP@k / R; or 'min-k-relevant': / min(k, R)
--   SET VARIABLE measures = ['P', 'recall', 'map', 'recip_rank', 'success'];
--   SET VARIABLE doc_weight_col = NULL;      -- set: map and recall are weighted_ap_curve's, TF-Ranking's
--
-- Creates: view top_k_measures (the columns of gain_measures, then P, recall, map, recip_rank,
-- success, gm_map, relative_P, unj, judged, err), the registry's formulas, from the counters
-- <signal>_<accumulation> and ERR's err_sum (null where none was kept at or above k, read as
-- 0); each null unless `measures` names it.
-- P and relative_P, unj and judged are null over the whole ranking (k null).

create or replace temp view top_k_measures as
with

-- the counters each formula reads, nulls (nothing at or above k) as 0
counts as (
    select
        c.*,
        coalesce(c.relevant_found, 0) as rel_ret,
        -- what AP@k divides by: R, or min(k, R) (R over the whole ranking, k null)
        case
            when getvariable('ap_denominator') = 'min-k-relevant' and c.k is not null
                then least(c.k, coalesce(c.relevant_in_qrels, 0))
            else coalesce(c.relevant_in_qrels, 0)
        end as ap_divisor
    from gain_measures as c
),

final as (
    select
        c.* exclude (rel_ret, ap_divisor),  -- noqa: RF02, RF03
        case
            when
                list_contains(getvariable('measures'), 'P')
                and coalesce(getvariable('precision_denominator'), 'k') = 'k'
                then cast(c.rel_ret as double) / c.k
            -- null over the whole ranking (k null), which least() would skip
            when list_contains(getvariable('measures'), 'P') and c.k is not null
                then coalesce(
                    cast(c.rel_ret as double) / nullif(least(c.k, coalesce(c.retrieved_in_ranking, 0)), 0), 0.0
                )
        end as "P",
        case
            -- TF-Ranking's recall with per-document weights: over the list's relevant results
            when list_contains(getvariable('measures'), 'recall') and getvariable('doc_weight_col') is not null
                then coalesce(cast(c.rel_ret as double) / nullif(c.relevant_listed, 0), 0.0)
            when list_contains(getvariable('measures'), 'recall')
                then coalesce(cast(c.rel_ret as double) / nullif(c.relevant_in_qrels, 0), 0.0)
        end as recall,
        case
            -- TF-Ranking's AP with per-document weights (sql/curves/weighted_ap_curve.sql)
            when list_contains(getvariable('measures'), 'map') and getvariable('doc_weight_col') is not null
                then coalesce(c.weighted_precision_sum / nullif(c.relevant_weight, 0), 0.0)
            when list_contains(getvariable('measures'), 'map')
                then coalesce(c.relevant_precision_sum / nullif(c.ap_divisor, 0), 0.0)
        end as map,
        case
            when list_contains(getvariable('measures'), 'recip_rank') then coalesce(1.0 / c.relevant_first_rank, 0.0)
        end as recip_rank,
        case when list_contains(getvariable('measures'), 'success') then cast(c.rel_ret > 0 as double) end as success,
        case
            when list_contains(getvariable('measures'), 'gm_map')
                then coalesce(c.relevant_precision_sum / nullif(c.ap_divisor, 0), 0.0)
        end as gm_map,
        case
            -- null over the whole ranking (k null), which least() would skip
            when list_contains(getvariable('measures'), 'relative_P') and c.k is not null
                then coalesce(cast(c.rel_ret as double) / nullif(least(c.k, c.relevant_in_qrels), 0), 0.0)
        end as "relative_P",
        -- the whole ranking has none (k null): a fraction of the top k
        case
            when list_contains(getvariable('measures'), 'unj')
                then cast(least(c.k, coalesce(c.retrieved_in_ranking, 0)) - coalesce(c.judged_found, 0) as double) / c.k
        end as unj,
        case
            when list_contains(getvariable('measures'), 'judged') then cast(coalesce(c.judged_found, 0) as double) / c.k
        end as judged,
        -- expected reciprocal rank: sql/curves/cascade_curve.sql's sum (none: no graded result at or above k)
        case when list_contains(getvariable('measures'), 'err') then coalesce(c.err_sum, 0.0) end as err
    from counts as c
)

select * from final;
