-- measures.sql: every measure of every evaluated query, ordering and cutoff, one formula each.
--
-- Step 18 of the per-query table (convention 4 of sql/per_query.sql), with
-- sql/measures_trec.sql, sql/measures_curve.sql and sql/measures_gain.sql the only ones naming
-- a measure. Reads: view measures_gain.
--
-- Variables:
--   SET VARIABLE empty_ideal = 'zero';       -- IDCG 0 scores 0; or 'one', 'nan', 'skip' (null)
--   SET VARIABLE precision_denominator = 'k';  -- P@k / k; or 'min-k-retrieved': / min(k, retrieved)
--   SET VARIABLE measures = ['ndcg', 'P', 'recall', 'map', 'recip_rank', 'success'];
--
-- Creates: view measures (ordering, query_id, k, cg, dcg, idcg, ndcg, P, recall, map,
-- recip_rank, success, then those of sql/measures_trec.sql, sql/measures_curve.sql and
-- sql/measures_gain.sql) of each evaluated query, cutoff and ordering (those of
-- sql/counted.sql): NDCG from the sums of the ranking and the ideal, the others
-- (pipeline/registry/'s formulas) from the counters <signal>_<accumulation> (null where none was
-- kept at or above k); null unless `measures` names them. AP divides by ap_divisor
-- (sql/measures_trec.sql: R, or min(k, R) under ap_denominator).

create or replace temp view measures as
with

final as (
    select
        c.ordering,
        c.query_id,
        c.k,
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
        -- each only when asked for (sql/per_query.sql reads them of 'retrieved' only)
        case
            when
                list_contains(getvariable('measures'), 'P')
                and coalesce(getvariable('precision_denominator'), 'k') = 'k'
                then coalesce(c.relevant_found, 0) / c.k
            -- null over the whole ranking (k null), which least() would skip
            when list_contains(getvariable('measures'), 'P') and c.k is not null
                then coalesce(c.relevant_found / nullif(least(c.k, coalesce(c.retrieved_in_ranking, 0)), 0), 0.0)
        end as "P",
        case
            when list_contains(getvariable('measures'), 'recall')
                then coalesce(c.relevant_found / nullif(c.relevant_in_qrels, 0), 0.0)
        end as recall,
        case
            when list_contains(getvariable('measures'), 'map')
                then coalesce(c.relevant_precision_sum / nullif(c.ap_divisor, 0), 0.0)
        end as map,
        case
            when list_contains(getvariable('measures'), 'recip_rank')
                then coalesce(1.0 / c.relevant_first_rank, 0.0)
        end as recip_rank,
        case
            when list_contains(getvariable('measures'), 'success')
                then cast(coalesce(c.relevant_found > 0, false) as double)
        end as success,
        c.num_q,
        c.num_ret,
        c.num_rel,
        c.num_rel_ret,
        c.num_nonrel_judged_ret,
        c.gm_map,
        c."relative_P",
        c."set_P",
        c."set_relative_P",
        c.set_recall,
        c.set_map,
        c."set_F",
        c.utility,
        c.unj,
        c.judged,
        c.rprec, c.rprec_mult_0_20, c.rprec_mult_0_40, c.rprec_mult_0_60, c.rprec_mult_0_80, c.rprec_mult_1_00,
        c.rprec_mult_1_20, c.rprec_mult_1_40, c.rprec_mult_1_60, c.rprec_mult_1_80, c.rprec_mult_2_00,
        c.iprec_at_recall_0_00, c.iprec_at_recall_0_10, c.iprec_at_recall_0_20, c.iprec_at_recall_0_30,
        c.iprec_at_recall_0_40, c.iprec_at_recall_0_50, c.iprec_at_recall_0_60, c.iprec_at_recall_0_70,
        c.iprec_at_recall_0_80, c.iprec_at_recall_0_90, c.iprec_at_recall_1_00, c.iprec_11pt_avg,
        c.bpref, c.gm_bpref,
        c.infap, c."G", c."binG", c."Rndcg", c.ndcg_rel, c.rbp, c.rbp_resid
    from measures_gain as c
)

select * from final;
