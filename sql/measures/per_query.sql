-- per_query.sql: CG, DCG, IDCG, NDCG and companions at every cutoff, one row per query and k.
--
-- The last step of the per-query table. The steps before it (pipeline/sql_files.py lists them in
-- order, sql/ndcg.sql reads them so) are grouped by stage in sql/ranking/, sql/counters/,
-- sql/curves/ and sql/measures/, each a view read by the later ones; each has a Polars twin of
-- its name in the module of its stage (pipeline/engines/polars/<stage>.py). Reads: views run and
-- qrels (e.g. sql/inputs.sql) through those steps; views measures and retrieved here.
--
-- Conventions (defaults are trec_eval's; the definitions are in pipeline/registry/):
--   1. results ordered by score desc; ties by doc_id desc in string order ('docid-desc'),
--      asc ('docid-asc'), by input_rank then arrival ('input-order'), or sharing their mean
--      gain ('average')
--   2. negative labels count as unjudged; unjudged documents gain 0; relevant means
--      label >= relevance_threshold (label > 0 when unset): the 'binary' gain, the counters
--   3. the ideal ranking, cut at k: the positive gains of every judged document ('judged'), of
--      the ranked ones ('retrieved'), or of the judged cut at the results' number ('judged-cut-at-hits')
--   4. a query whose IDCG is 0 scores 0 ('zero'), 1 ('one'), NaN ('nan') or null ('skip')
--   5. queries only in the run are not evaluated, or evaluated with every document unjudged
--      when queries_without_judgments is 'evaluate'; queries only in the qrels are skipped, or
--      score 0 when all_queries is true (trec_eval -c); max_results keeps the best N (-M)
--   6. unjudged = 'drop' removes unjudged documents (absent or labelled below 0) after max_results
--   7. duplicates in the run: refused before this runs ('error', pipeline/validate.py), or
--      the first row to arrive ('first') or the highest score ('max-score') is kept
--   8. P@k divides by k, or min(k, retrieved) ('min-k-retrieved', precision_denominator); AP@k
--      by R, or min(k, R) ('min-k-relevant', ap_denominator)
--
-- Variables: each step's header has its own; only ks is required. This step reads:
--   SET VARIABLE tie_bounds = true;          -- also the lowest and highest NDCG over orders of ties
--   SET VARIABLE ties = 'docid-desc';        -- or 'docid-asc', 'input-order' or 'average'
--
-- Creates: table per_query (query_id, k, the measures asked (cg, dcg, idcg, ndcg, then those
-- `measures` names: sql/measures/measures.sql), ndcg_min, ndcg_max, ties_straddle_k); k is null
-- for the whole ranking.
-- A table, not a view: computed once, with the variables set when this file runs. ndcg_min,
-- ndcg_max: the NDCG of the worst and best order of tied results (ties by gain ascending,
-- descending); ties_straddle_k: whether ranks k and k + 1 are tied. All three null unless
-- tie_bounds is true (refused by pipeline/registry/ where not exact).

create or replace temp table per_query as
with

-- read three times (each ordering): one CTE, computed once
scores as (
    select * from measures
),

-- empty without tie_bounds (as tie_orders is), said so that sqlglot prunes their joins for Spark
worst as (
    select scores.* from scores
    where scores.ordering = 'worst' and coalesce(getvariable('tie_bounds'), false)
),

best as (
    select scores.* from scores
    where scores.ordering = 'best' and coalesce(getvariable('tie_bounds'), false)
),

as_ranked as (
    select retrieved.*
    from retrieved
    where retrieved.ordering = 'retrieved'
),

-- whether the results at rank k and k + 1 are tied: a tie group that straddles the cutoff
straddles as (
    select
        as_ranked.query_id,
        as_ranked.rank,
        coalesce(
            lead(as_ranked.score) over in_rank_order = as_ranked.score
            and (
                getvariable('ties') is distinct from 'input-order'
                or lead(as_ranked.input_rank) over in_rank_order is not distinct from as_ranked.input_rank
            ),
            false
        ) as tied_with_next
    from as_ranked
    where coalesce(getvariable('tie_bounds'), false)
    window in_rank_order as (partition by as_ranked.query_id order by as_ranked.rank asc)
),

final as (
    select
        -- query_id, k and every measure asked (sql/measures/measures.sql): none is listed again here
        scores.* exclude (ordering),  -- noqa: RF02
        cast(worst.ndcg as double) as ndcg_min,  -- typed when the join is pruned away
        cast(best.ndcg as double) as ndcg_max,
        case
            when coalesce(getvariable('tie_bounds'), false) and scores.k is not null
                then coalesce(straddles.tied_with_next, false)
        end as ties_straddle_k
    from scores
    left join worst on scores.query_id = worst.query_id and scores.k is not distinct from worst.k
    left join best on scores.query_id = best.query_id and scores.k is not distinct from best.k
    left join straddles on scores.query_id = straddles.query_id and scores.k = straddles.rank
    where scores.ordering = 'retrieved'
)

select * from final
order by query_id asc, k asc nulls first;
