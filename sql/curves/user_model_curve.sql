-- user_model_curve.sql: per query and cutoff, the expected gain per result read that the C/W/L
-- measures (SDCG) report, as cwl_eval computes it.
--
-- Reads: views cwl_gains (sql/curves/cwl_gains.sql: the ranks of positive gain) and cutoffs
-- (sql/ranking/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE curves = ['user_model_curve']; -- the curves the asked measures read (the registry's)
--
-- Creates: view user_model_curve (query_id, k, sdcg_value), one row per query and cutoff k (not
-- the whole ranking) with a rank of positive gain at or above k when `curves` names it (else no
-- row): sdcg_value is the registry's SDCG@k, the sum over the ranks i <= min(k, 1000) of
-- gain(i) / log2(i + 1) over the sum of 1 / log2(i + 1) for i = 1 to min(k, 1000), with
-- gain(i) = (min(max(label, cwl_min_rel), cwl_max_rel) - cwl_min_rel) / (cwl_max_rel -
-- cwl_min_rel). Only the first 1000 ranks are read, cwl_eval's depth (its max_n). A rank
-- unjudged or labelled at or below cwl_min_rel gains 0 and adds nothing. Every sum runs in rank
-- order, so a rerun gives the same bits (a parallel sum() does not).

create or replace temp view user_model_curve as
with

-- the ranks of positive gain
gains as (
    select cwl_gains.*
    from cwl_gains
    where list_contains(getvariable('curves'), 'user_model_curve')
),

-- the ranks cwl_eval reads (its max_n), each alone in its own select: Spark allows no generator
-- inside an expression
positions as (
    select unnest(range(1, 1001)) as i
),

-- SDCG's denominator at each cutoff: the discounts of the first min(k, 1000) ranks, in rank order
discount_sums as (
    select
        cutoffs.k,
        sum(1.0 / log2(positions.i + 1.0) order by positions.i asc) as discount_sum
    from cutoffs
    cross join positions
    where
        cutoffs.k is not null
        and positions.i <= cutoffs.k
        and list_contains(getvariable('curves'), 'user_model_curve')
    group by cutoffs.k
),

final as (
    select
        gains.query_id,
        discount_sums.k,
        sum(gains.gain / log2(gains.rank + 1.0) order by gains.rank asc) / max(discount_sums.discount_sum)
            as sdcg_value
    from gains
    inner join discount_sums on gains.rank <= discount_sums.k
    group by gains.query_id, discount_sums.k
)

select * from final;
