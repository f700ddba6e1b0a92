-- measures.sql: NDCG and the measures of the top k, one formula each; then every measure asked.
--
-- Convention 4 of sql/measures/per_query.sql. With set_measures, curve_measures and
-- gain_measures (sql/measures/), the only steps naming a measure. Reads: view gain_measures.
--
-- Variables:
--   SET VARIABLE empty_ideal = 'zero';       -- IDCG 0 scores 0; or 'one', 'nan', 'skip' (null)
--   SET VARIABLE precision_denominator = 'k';  -- P@k / k; or 'min-k-retrieved': / min(k, retrieved)
--   SET VARIABLE ap_denominator = 'relevant';  -- AP@k / R; or 'min-k-relevant': / min(k, R)
--   SET VARIABLE measures = ['ndcg', 'P', 'recall', 'map', 'recip_rank', 'success'];
--   SET VARIABLE measure_columns = ['cg', 'dcg', 'idcg', 'ndcg', 'P'];  -- the columns asked (unset: NDCG's)
--
-- Creates: view measures (ordering, query_id, k, then the columns of `measure_columns`, in the
-- order the steps compute them) of each evaluated query, cutoff and ordering (those of
-- sql/measures/counted.sql): NDCG from the sums of the ranking and the ideal, the others (the
-- registry's formulas) from the counters <signal>_<accumulation> (null where none was kept at or
-- above k); each null unless `measures` names it. A measure not asked is no column.

create or replace temp view measures as
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

computed as (
    select
        c.* exclude (cg, dcg, idcg),  -- noqa: RF02
        coalesce(c.cg, 0.0) as cg,
        coalesce(c.dcg, 0.0) as dcg,
        coalesce(c.idcg, 0.0) as idcg,
        case
            when c.idcg > 0 then coalesce(c.dcg, 0.0) / c.idcg
            when getvariable('empty_ideal') = 'one' then 1.0
            when getvariable('empty_ideal') = 'nan' then cast('NaN' as double)
            when getvariable('empty_ideal') = 'skip' then cast(null as double)
            else 0.0
        end as ndcg,
        case
            when
                list_contains(getvariable('measures'), 'P')
                and coalesce(getvariable('precision_denominator'), 'k') = 'k'
                then c.rel_ret / c.k
            -- null over the whole ranking (k null), which least() would skip
            when list_contains(getvariable('measures'), 'P') and c.k is not null
                then coalesce(c.rel_ret / nullif(least(c.k, coalesce(c.retrieved_in_ranking, 0)), 0), 0.0)
        end as "P",
        case
            when list_contains(getvariable('measures'), 'recall')
                then coalesce(c.rel_ret / nullif(c.relevant_in_qrels, 0), 0.0)
        end as recall,
        case
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
                then coalesce(c.rel_ret / nullif(least(c.k, c.relevant_in_qrels), 0), 0.0)
        end as "relative_P",
        -- the whole ranking has none (k null): a fraction of the top k
        case
            when list_contains(getvariable('measures'), 'unj')
                then (least(c.k, coalesce(c.retrieved_in_ranking, 0)) - coalesce(c.judged_found, 0)) / c.k
        end as unj,
        case when list_contains(getvariable('measures'), 'judged') then coalesce(c.judged_found, 0) / c.k end
            as judged
    from counts as c
),

-- noqa: disable=RF02,RF03
final as (
    select
        computed.ordering,
        computed.query_id,
        computed.k,
        columns(lambda c: list_contains(coalesce(getvariable('measure_columns'), ['cg', 'dcg', 'idcg', 'ndcg']), c))
    from computed
)

select * from final;
