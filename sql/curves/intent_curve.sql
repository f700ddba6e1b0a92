-- intent_curve.sql: per query and cutoff, the subtopics and sums ndeval's intent-aware measures read.
--
-- Reads: views intent_pairs and intent_ideal (sql/curves/) and cutoffs (sql/ranking/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE curves = ['intent_curve'];  -- the curves the asked measures read (the registry's)
--
-- Creates: view intent_curve (query_id, k, intent_subtopics, intent_covered, intent_pairs,
-- intent_err_sum, intent_ap_sum, intent_dcg_sum, intent_nrbp_sum, intent_err_norm,
-- intent_dcg_norm, intent_ideal_err, intent_ideal_dcg, intent_ideal_nrbp), one row per query
-- and cutoff with a result relevant to a subtopic at or above k (k null: the whole ranking):
-- intent_subtopics is S; intent_covered the subtopics with a relevant result at or above k;
-- intent_pairs the (rank, subtopic) pairs at or above k. Over
-- those pairs, with n the results relevant to the subtopic at or above the rank and g = (1 -
-- alpha)^(n - 1) its gain (ndeval's alpha, 0.5), the sums of g / rank (ERR-IA), n / rank / R (R
-- the documents judged relevant to the subtopic; MAP-IA), g / log2(rank + 1) (alpha-DCG) and
-- beta^(rank - 1) * g (NRBP, ndeval's beta 0.5); intent_err_norm and intent_dcg_norm are
-- ndeval's "ideal ideal" of ERR-IA and alpha-DCG at k for one subtopic, the sums over i <= k of
-- (1 - alpha)^(i - 1) / i and / log2(i + 1) (null for the whole ranking); the intent_ideal_
-- columns the greedy ideal's sums (sql/curves/intent_ideal.sql; null unless asked).

create or replace temp view intent_curve as
with

-- each rank's pairs summed in subtopic order, then the ranks' in rank order (the same bits on
-- every run, and the Polars twin's)
rank_terms as (
    select
        intent_pairs.query_id,
        intent_pairs.rank,
        max(intent_pairs.subtopics) as subtopics,
        count_if(intent_pairs.found_so_far = 1) as covered,
        count(*) as pair_count,
        sum(
            power(0.5, intent_pairs.found_so_far - 1) / intent_pairs.rank order by intent_pairs.subtopic asc
        ) as err_term,
        sum(
            cast(intent_pairs.found_so_far as double) / intent_pairs.rank / intent_pairs.subtopic_relevant
            order by intent_pairs.subtopic asc
        ) as ap_term,
        sum(
            power(0.5, intent_pairs.found_so_far - 1) * ln(2.0) / ln(intent_pairs.rank + 1.0)
            order by intent_pairs.subtopic asc
        ) as dcg_term,
        sum(
            power(0.5, intent_pairs.rank - 1) * power(0.5, intent_pairs.found_so_far - 1)
            order by intent_pairs.subtopic asc
        ) as nrbp_term
    from intent_pairs
    group by intent_pairs.query_id, intent_pairs.rank
),

err_norms as (
    select
        cutoffs.k,
        sum(power(0.5, steps.i - 1) / steps.i order by steps.i asc) as intent_err_norm,
        sum(power(0.5, steps.i - 1) * ln(2.0) / ln(steps.i + 1.0) order by steps.i asc) as intent_dcg_norm
    from cutoffs
    cross join unnest(range(1, cutoffs.k + 1)) as steps (i)
    where cutoffs.k is not null and list_contains(getvariable('curves'), 'intent_curve')
    group by cutoffs.k
),

summed as (
    select
        rank_terms.query_id,
        cutoffs.k,
        max(rank_terms.subtopics) as intent_subtopics,
        sum(rank_terms.covered) as intent_covered,
        sum(rank_terms.pair_count) as intent_pairs,
        sum(rank_terms.err_term order by rank_terms.rank asc) as intent_err_sum,
        sum(rank_terms.ap_term order by rank_terms.rank asc) as intent_ap_sum,
        sum(rank_terms.dcg_term order by rank_terms.rank asc) as intent_dcg_sum,
        sum(rank_terms.nrbp_term order by rank_terms.rank asc) as intent_nrbp_sum
    from rank_terms
    cross join cutoffs
    where cutoffs.k is null or rank_terms.rank <= cutoffs.k
    group by rank_terms.query_id, cutoffs.k
),

final as (
    select
        summed.*,
        err_norms.intent_err_norm,
        err_norms.intent_dcg_norm,
        intent_ideal.intent_ideal_err,
        intent_ideal.intent_ideal_dcg,
        intent_ideal.intent_ideal_nrbp
    from summed
    left join err_norms on summed.k = err_norms.k
    left join intent_ideal on summed.query_id = intent_ideal.query_id and summed.k is not distinct from intent_ideal.k
)

select * from final;
