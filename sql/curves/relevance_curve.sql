-- relevance_curve.sql: per query, where its relevant results sit, as Rprec, iprec, bpref, infAP, binG read it.
--
-- Reads: views signals (sql/counters/signals.sql: the signals relevant, nonrelevant and pooled of
-- each rank) and counters (sql/counters/counters.sql).
--
-- Variables:
--   SET VARIABLE curves = ['relevance_curve'];   -- the curves the asked measures read (the registry's)
--
-- Creates: view relevance_curve (query_id, bpref_sum, bing_sum, relevant_in_top_r,
-- relevant_in_top_<x>, iprec_max_<r>, infap_sum), one row per evaluated query with a relevant
-- result, when `curves` names it (else no row). Over the relevant results, of R relevant and N
-- judged nonrelevant documents: bpref_sum of 1 - min(judged nonrelevant above, R) / min(N, R) (1
-- with none above); bing_sum of 1 / (ln(2 + the results not relevant above) / ln 2) (m_binG.c);
-- relevant_in_top_<x>: in the top floor(x * R + 0.9) (r: R); iprec_max_<r>: the highest found /
-- rank where found >= round(r * R), halves away from 0 (trec_eval 10.0's lround); infap_sum of 1
-- at rank 1, else 1/k + ((k-1)/k) * (p/(k-1)) * (r + eps) / (r + n + 2 eps), p pooled, r
-- relevant, n judged nonrelevant above rank k, eps = 1e-5, in m_infap.c's order of operations.
-- Every sum runs in rank order, so a rerun gives the same bits (a parallel sum() does not).

create or replace temp view relevance_curve as
with

relevant_ranks as (
    select
        s.query_id,
        s.rank,
        s.relevant,
        sum(cast(s.relevant as int)) over running as found,
        sum(cast(s.nonrelevant as int)) over running as nonrelevant_above,
        sum(cast(s.pooled as int)) over running as pooled_so_far
    from signals as s
    where
        s.source = 'ranking'
        and s.ranking = 'retrieved'
        and list_contains(getvariable('curves'), 'relevance_curve')
    window running as (partition by s.query_id order by s.rank asc rows unbounded preceding)
),

relevant as (
    select
        relevant_ranks.*,
        cast(counters.relevant_in_qrels as double) as r,
        least(counters.nonrelevant_in_qrels, counters.relevant_in_qrels) as preferences
    from relevant_ranks
    inner join counters on relevant_ranks.query_id = counters.query_id
    where relevant_ranks.relevant
),

final as (
    select
        v.query_id,
        sum(
            case
                when v.nonrelevant_above > 0
                    then 1.0 - cast(least(v.nonrelevant_above, v.r) as double) / v.preferences
                else 1.0
            end
            order by v.rank asc
        ) as bpref_sum,
        sum(1.0 / (ln(2.0 + v.rank - v.found) / ln(2.0)) order by v.rank asc) as bing_sum,
        count(case when v.rank <= v.r then 1 end) as relevant_in_top_r,
        count(case when v.rank <= floor(0.20e0 * v.r + 0.9) then 1 end) as relevant_in_top_0_20,
        count(case when v.rank <= floor(0.40e0 * v.r + 0.9) then 1 end) as relevant_in_top_0_40,
        count(case when v.rank <= floor(0.60e0 * v.r + 0.9) then 1 end) as relevant_in_top_0_60,
        count(case when v.rank <= floor(0.80e0 * v.r + 0.9) then 1 end) as relevant_in_top_0_80,
        count(case when v.rank <= floor(1.00e0 * v.r + 0.9) then 1 end) as relevant_in_top_1_00,
        count(case when v.rank <= floor(1.20e0 * v.r + 0.9) then 1 end) as relevant_in_top_1_20,
        count(case when v.rank <= floor(1.40e0 * v.r + 0.9) then 1 end) as relevant_in_top_1_40,
        count(case when v.rank <= floor(1.60e0 * v.r + 0.9) then 1 end) as relevant_in_top_1_60,
        count(case when v.rank <= floor(1.80e0 * v.r + 0.9) then 1 end) as relevant_in_top_1_80,
        count(case when v.rank <= floor(2.00e0 * v.r + 0.9) then 1 end) as relevant_in_top_2_00,
        max(case when v.found >= round(0.00e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_00,
        max(case when v.found >= round(0.10e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_10,
        max(case when v.found >= round(0.20e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_20,
        max(case when v.found >= round(0.30e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_30,
        max(case when v.found >= round(0.40e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_40,
        max(case when v.found >= round(0.50e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_50,
        max(case when v.found >= round(0.60e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_60,
        max(case when v.found >= round(0.70e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_70,
        max(case when v.found >= round(0.80e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_80,
        max(case when v.found >= round(0.90e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_0_90,
        max(case when v.found >= round(1.00e0 * v.r) then cast(v.found as double) / v.rank end) as iprec_max_1_00,
        sum(
            case
                when v.rank = 1 then 1.0
                else
                    1.0 / v.rank
                    + ((v.rank - 1.0) / v.rank)
                    * ((v.pooled_so_far - 1.0) / (v.rank - 1.0))
                    * ((v.found - 1.0 + 1e-5) / (v.found - 1.0 + v.nonrelevant_above + 2.0 * 1e-5))
            end
            order by v.rank asc
        ) as infap_sum
    from relevant as v
    group by v.query_id
)

select * from final;
