-- measures.sql: NDCG and cwl_eval's, one formula each; then the measures asked, as columns.
--
-- Convention 4 of sql/measures/per_query.sql. With set_measures, curve_measures, gain_measures,
-- top_k_measures and intent_measures (sql/measures/), the only steps naming a measure. Reads: view
-- intent_measures.
--
-- Variables:
--   SET VARIABLE empty_ideal = 'zero';       -- IDCG 0 scores 0; or 'one', 'nan', 'skip' (null)
--   SET VARIABLE measure_columns = ['cg', 'dcg', 'idcg', 'ndcg', 'P'];  -- the columns asked (unset: NDCG's)
--
-- Creates: view measures (ordering, query_id, k, cg, dcg, idcg, ndcg, then the other columns of
-- `measure_columns`, in the order the steps compute them) of each evaluated query, cutoff and
-- ordering (those of sql/measures/counted.sql): cg, dcg, idcg and NDCG from the sums of the
-- ranking and the ideal (null where nothing at or above k earns, read as 0), cwl_eval's SDCG@k,
-- NERR8@k, NERR9@k, BPM@k (null for the whole ranking), INST, INSQ, NERR10, NERR11,
-- ir_measures' Compat and scikit-learn's average_precision_score (of it only) from sql/curves/, and
-- the measures of the steps before it. A measure not asked is no column.

create or replace temp view measures as
with

-- NDCG's first: the columns asked follow in the order of the steps (DuckDB's columns(...))
computed as (
    select
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
        -- the C/W/L measures' NDCG: none kept (no gain at or above k) is 0
        case when c.k is not null then coalesce(c.sdcg_value, 0.0) end as "SDCG",
        case when c.k is not null then coalesce(c.nerr8_value, 0.0) end as "NERR8",
        case when c.k is not null then coalesce(c.nerr9_value, 0.0) end as "NERR9",
        case when c.k is null then coalesce(c.inst_value, 0.0) end as "INST",
        case when c.k is null then coalesce(c.insq_value, 0.0) end as "INSQ",
        case when c.k is null then coalesce(c.nerr10_value, 0.0) end as "NERR10",
        case when c.k is null then coalesce(c.nerr11_value, 0.0) end as "NERR11",
        case when c.k is not null then coalesce(c.bpm_value, 0.0) end as "BPM",
        case when c.k is null then coalesce(c.compat_value, 0.0) end as "Compat",
        c.* exclude (cg, dcg, idcg),  -- noqa: RF02
        -- scikit-learn's AP over score thresholds: a ranking without relevant weight scores 0
        case
            when c.k is null and c.threshold_relevant_weight > 0
                then c.threshold_precision_sum / c.threshold_relevant_weight
            when c.k is null then 0.0
        end as average_precision_score
    from intent_measures as c
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
