-- gain_curve.sql: per query, the sums over the gains of its ranking and of its ideal that
-- trec_eval's G, Rndcg and ndcg_rel and rank-biased precision read.
--
-- Step 12 of the per-query table. Reads: views rankings, running_sums and judgments.
--
-- Variables:
--   SET VARIABLE measures = ['G', 'Rndcg', 'ndcg_rel', 'rbp'];
--   SET VARIABLE rbp_persistence = 0.9;      -- p of rank-biased precision (unset: 0.9)
--
-- Creates: view gain_curve (query_id, largest_gain, ideal_length, ideal_gain, g_sum,
-- ndcg_rel_sum, positive_ranks, rbp_sum, judged_weight, rndcg_sum, rndcg_points), one row per
-- judged query when `measures` names a family above (else no row). Of the ranking by score,
-- each kept rank i earning g(i) with its running cg and dcg, and of the ideal ranking, its M
-- positive gains g*(j) (ideal_length; their sum ideal_gain) with its running idcg and cost
-- c(j) = max(g*(1), 1) + ... + max(g*(j), 1), past M 1 a rank (pipeline/spec.py's G):
-- largest_gain: the query's largest gain of a judged document (label >= 0); g_sum: over the
-- ranks with g(i) <> 0, g(i) / log2(2 + c(i) - cg(i)); ndcg_rel_sum: over the ranks with
-- g(i) > 0 (positive_ranks of them), dcg(i) / idcg(min(i, M)); rbp_sum: max(g(i), 0) *
-- p^(i-1); judged_weight: p^(i-1) over the judged ranks; rndcg_sum: over the ranks b where
-- the ideal's gain changes (rndcg_points of them), the ranking's dcg at its last kept rank
-- <= b over idcg(b).

create or replace temp view gain_curve as
with

-- the kept ranks of the ranking by score and of the ideal, each with its running sums
ranks as (
    select
        rankings.ranking,
        rankings.query_id,
        rankings.rank,
        rankings.credited_gain,
        rankings.judged,
        running_sums.next_rank,
        running_sums.cg,
        running_sums.dcg
    from rankings
    inner join running_sums
        on rankings.ranking = running_sums.ranking
        and rankings.query_id = running_sums.query_id
        and rankings.rank = running_sums.rank
    where
        rankings.ranking in ('retrieved', 'ideal')
        and (
            list_contains(getvariable('measures'), 'G')
            or list_contains(getvariable('measures'), 'Rndcg')
            or list_contains(getvariable('measures'), 'ndcg_rel')
            or list_contains(getvariable('measures'), 'rbp')
        )
),

ideal as (
    select
        ranks.query_id,
        ranks.rank,
        ranks.credited_gain as gain,
        ranks.dcg as idcg,
        sum(greatest(ranks.credited_gain, 1.0)) over running as ideal_cost,
        lead(ranks.credited_gain) over in_rank_order as next_gain
    from ranks
    where ranks.ranking = 'ideal'
    window
        in_rank_order as (partition by ranks.query_id order by ranks.rank),
        running as (partition by ranks.query_id order by ranks.rank rows unbounded preceding)
),

totals as (
    select
        ideal.query_id,
        count(*) as ideal_length,
        sum(ideal.gain) as ideal_gain
    from ideal
    group by ideal.query_id
),

-- each rank of the ranking by score beside the ideal's sums at rank min(i, M)
beside_ideal as (
    select
        ranks.query_id,
        ranks.rank,
        ranks.credited_gain as gain,
        ranks.judged,
        ranks.cg,
        ranks.dcg,
        ideal.idcg,
        coalesce(ideal.ideal_cost, 0.0) + greatest(ranks.rank - coalesce(totals.ideal_length, 0), 0) as rank_cost
    from ranks
    left join totals on ranks.query_id = totals.query_id
    left join ideal
        on ranks.query_id = ideal.query_id
        and least(ranks.rank, coalesce(totals.ideal_length, 0)) = ideal.rank
    where ranks.ranking = 'retrieved'
),

per_rank as (
    select
        b.query_id,
        sum(case when b.gain <> 0 then b.gain / log2(2.0 + b.rank_cost - b.cg) end) as g_sum,
        sum(case when b.gain > 0 then b.dcg / b.idcg end) as ndcg_rel_sum,
        count(case when b.gain > 0 then 1 end) as positive_ranks,
        sum(greatest(b.gain, 0.0) * power(coalesce(getvariable('rbp_persistence'), 0.9), b.rank - 1)) as rbp_sum,
        sum(case when b.judged then power(coalesce(getvariable('rbp_persistence'), 0.9), b.rank - 1) end)
            as judged_weight
    from beside_ideal as b
    group by b.query_id
),

-- NDCG@b at each rank b where the ideal's gain changes: the ranking's dcg at its last kept
-- rank <= b (none kept: 0)
boundaries as (
    select
        ideal.query_id,
        ideal.rank as boundary,
        ideal.idcg
    from ideal
    where ideal.next_gain is null or ideal.next_gain <> ideal.gain
),

points as (
    select
        boundaries.query_id,
        sum(coalesce(ranks.dcg, 0.0) / boundaries.idcg) as rndcg_sum,
        count(*) as rndcg_points
    from boundaries
    left join ranks
        on boundaries.query_id = ranks.query_id
        and ranks.ranking = 'retrieved'
        and boundaries.boundary >= ranks.rank
        and (ranks.next_rank is null or boundaries.boundary < ranks.next_rank)
    group by boundaries.query_id
),

largest as (
    select
        judgments.query_id,
        max(case when judgments.judged then judgments.gain end) as largest_gain
    from judgments
    where
        list_contains(getvariable('measures'), 'G')
        or list_contains(getvariable('measures'), 'Rndcg')
        or list_contains(getvariable('measures'), 'ndcg_rel')
        or list_contains(getvariable('measures'), 'rbp')
    group by judgments.query_id
),

final as (
    select
        largest.query_id,
        largest.largest_gain,
        totals.ideal_length,
        totals.ideal_gain,
        per_rank.g_sum,
        per_rank.ndcg_rel_sum,
        per_rank.positive_ranks,
        per_rank.rbp_sum,
        per_rank.judged_weight,
        points.rndcg_sum,
        points.rndcg_points
    from largest
    left join totals on largest.query_id = totals.query_id
    left join per_rank on largest.query_id = per_rank.query_id
    left join points on largest.query_id = points.query_id
)

select * from final;
