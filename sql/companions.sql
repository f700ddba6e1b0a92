-- companions.sql: how many documents of each judged query are relevant, for the companion measures.
--
-- Step 8 of the per-query table; no rows unless one of the measures P, recall, map,
-- recip_rank or success is asked for (then sql/sums_at_cutoffs.sql counts the relevant
-- ranks of the ranking, and sql/scored.sql computes the measures).
-- Reads: view judgments (sql/judgments.sql).
--
-- Variables:
--   SET VARIABLE measures = ['ndcg', 'P', 'recall', 'map', 'recip_rank', 'success'];
--
-- Creates: view companions (query_id, relevant_judged): every judged query (the evaluated
-- ones are among them) and its relevant documents: a label judged (>= 0) and at or above
-- relevance_threshold (> 0 when unset); gains play no part in these measures. At cutoff k
-- (k null: the whole ranking), with found the relevant results at or above k:
--   P = found / k (null for the whole ranking)
--   recall = found / relevant_judged (0 when relevant_judged is 0)
--   map = the sum of found_i / i over the relevant ranks i <= k, / relevant_judged (0 when
--         relevant_judged is 0)
--   recip_rank = 1 / the first relevant rank if it is <= k, else 0
--   success = 1 if found > 0, else 0

create or replace temp view companions as
with

-- a companion measure is asked for when measures holds a family besides NDCG (which the
-- API always names and a duckdb CLI user may leave out): no other measure is named here, so
-- a new one is not listed again
asked as (
    select
        coalesce(
            array_length(list_distinct(list_concat(getvariable('measures'), ['ndcg']))) > 1, false
        ) as any_companion
),

final as (
    select
        judgments.query_id,
        sum(case when judgments.relevant then 1 else 0 end) as relevant_judged
    from judgments
    cross join asked
    where asked.any_companion
    group by judgments.query_id
)

select * from final;
