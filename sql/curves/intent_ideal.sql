-- intent_ideal.sql: the sums of ndeval's greedy ideal ranking at each cutoff, which alpha_nDCG,
-- nERR_IA and nNRBP divide by.
--
-- Reads: views intent_greedy (sql/curves/intent_greedy.sql) and cutoffs (sql/ranking/cutoffs.sql).
--
-- Variables: none.
--
-- Creates: view intent_ideal (query_id, k, intent_ideal_err, intent_ideal_dcg,
-- intent_ideal_nrbp), per query of intent_greedy and cutoff (k null: the whole ranking), with g
-- the ideal's gain at rank i, the sums over i <= k of g / i (nERR_IA's) and g / log2(i + 1)
-- (alpha_nDCG's), and over every i of 0.5^(i - 1) * g (nNRBP's, beta 0.5), each in rank order.

create or replace temp view intent_ideal as
with

final as (
    select
        intent_greedy.query_id,
        cutoffs.k,
        sum(intent_greedy.gain / intent_greedy.rank order by intent_greedy.rank asc) as intent_ideal_err,
        sum(
            intent_greedy.gain * ln(2.0) / ln(intent_greedy.rank + 1.0) order by intent_greedy.rank asc
        ) as intent_ideal_dcg,
        sum(
            power(0.5, intent_greedy.rank - 1) * intent_greedy.gain order by intent_greedy.rank asc
        ) as intent_ideal_nrbp
    from intent_greedy
    cross join cutoffs
    where cutoffs.k is null or intent_greedy.rank <= cutoffs.k
    group by intent_greedy.query_id, cutoffs.k
)

select * from final;
