-- gain_curve.sql: per query, the sums over its ranking's gains that G, Rndcg, ndcg_rel and rbp read.
--
-- Reads: views signals (sql/counters/signals.sql: the ranks with the signal judged), running_sums
-- (sql/counters/running_sums.sql), ideal_curve (sql/curves/ideal_curve.sql) and judgments.
--
-- Variables:
--   SET VARIABLE curves = ['gain_curve'];    -- the curves the asked measures read (the registry's)
--   SET VARIABLE measure_columns = ['rbp'];  -- the columns asked: what is joined (rbp reads no sums)
--   SET VARIABLE rbp_persistence = 0.9;      -- p of rank-biased precision (unset: 0.9)
--
-- Creates: view gain_curve (query_id, largest_gain, ideal_length, ideal_gain, g_sum, ndcg_rel_sum,
-- positive_ranks, rbp_sum, judged_weight, rndcg_sum, rndcg_points), one row per judged query when
-- `curves` names it (else no row), as the registry's G ... rbp_resid define them, with the ideal's
-- M, idcg and cost c of sql/curves/ideal_curve.sql (c grows 1 a rank past M); judged_weight, of
-- the judged ranks; log2 as ln(x) / ln(2), the Polars engine's bits. Every sum runs in rank
-- order, so a rerun gives the same bits (a parallel sum() does not).

create or replace temp view gain_curve as
with

ranks as (
    select s.*, running_sums.next_rank, running_sums.cg, running_sums.dcg
    from signals as s
    -- each rank has its running sums: left and inner joins keep the same rows
    left join running_sums
        on s.ranking = running_sums.ranking
        and s.query_id = running_sums.query_id
        and s.rank = running_sums.rank
        and list_has_any(getvariable('measure_columns'), ['G', 'Rndcg', 'ndcg_rel'])
    where s.source = 'ranking' and s.ranking = 'retrieved' and list_contains(getvariable('curves'), 'gain_curve')
),

-- each beside the ideal's sums at rank min(i, M), M read off the ideal's first rank
beside_ideal as (
    select
        ranks.*,
        ideal.idcg,
        power(cast(coalesce(getvariable('rbp_persistence'), 0.9) as double), ranks.rank - 1) as weight,
        coalesce(ideal.ideal_cost, 0.0) + greatest(ranks.rank - coalesce(totals.ideal_length, 0), 0) as rank_cost
    from ranks
    left join ideal_curve as totals
        on ranks.query_id = totals.query_id and totals.rank = 1
        and list_has_any(getvariable('measure_columns'), ['G', 'ndcg_rel'])
    left join ideal_curve as ideal
        on ranks.query_id = ideal.query_id and least(ranks.rank, coalesce(totals.ideal_length, 0)) = ideal.rank
        and list_has_any(getvariable('measure_columns'), ['G', 'ndcg_rel'])
),

per_rank as (
    select
        b.query_id,
        sum(
            case when b.credited_gain <> 0 then b.credited_gain / (ln(2.0 + b.rank_cost - b.cg) / ln(2)) end
            order by b.rank asc
        ) as g_sum,
        sum(case when b.credited_gain > 0 then b.dcg / b.idcg end order by b.rank asc) as ndcg_rel_sum,
        count(case when b.credited_gain > 0 then 1 end) as positive_ranks,
        sum(greatest(b.credited_gain, 0.0) * b.weight order by b.rank asc) as rbp_sum,
        sum(case when b.judged then b.weight end order by b.rank asc) as judged_weight
    from beside_ideal as b
    group by b.query_id
),

-- NDCG@b at each boundary b of the ideal: the ranking's dcg at its last kept rank <= b, or 0
points as (
    select
        ideal.query_id,
        sum(coalesce(ranks.dcg, 0.0) / ideal.idcg order by ideal.rank asc) as rndcg_sum,
        count(*) as rndcg_points
    from ideal_curve as ideal
    left join ranks
        on ideal.query_id = ranks.query_id
        and ideal.rank >= ranks.rank
        and (ranks.next_rank is null or ideal.rank < ranks.next_rank)
    where ideal.boundary and list_contains(getvariable('measure_columns'), 'Rndcg')
    group by ideal.query_id
),

-- a negative label gains 0, so the largest gain of the judged is the largest of any
largest as (
    select judgments.query_id, max(judgments.gain) as largest_gain
    from judgments
    where list_contains(getvariable('curves'), 'gain_curve')
    group by judgments.query_id
),

final as (
    select
        largest.*,
        totals.ideal_length,
        totals.ideal_gain,
        per_rank.* exclude (query_id),  -- noqa: RF02
        points.* exclude (query_id)  -- noqa: RF02
    from largest
    left join ideal_curve as totals on largest.query_id = totals.query_id and totals.rank = 1
    left join per_rank on largest.query_id = per_rank.query_id
    left join points on largest.query_id = points.query_id
)

select * from final;
