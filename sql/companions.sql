-- companions.sql: P, recall, AP, RR and success of every judged query, at every cutoff.
--
-- Step 10 of the per-query table; no rows unless one of these measures is asked for.
-- Reads: views retrieved (sql/retrieved.sql), judgments (sql/judgments.sql) and cutoffs
-- (sql/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE measures = ['ndcg', 'P', 'recall', 'map', 'recip_rank', 'success'];
--
-- Creates: view companions (query_id, k, P, recall, map, recip_rank, success), one row per
-- judged query and cutoff; a measure not asked for is null. A result is relevant when its
-- label is judged (>= 0) and at or above relevance_threshold (> 0 when unset); gains play
-- no part. At cutoff k (k null: the whole ranking), with found the relevant results at or
-- above k and relevant_judged the relevant documents of the qrels: P = found / k (null for
-- the whole ranking); recall = found / relevant_judged; map = the sum of found_i / i over
-- the relevant ranks i <= k, / relevant_judged (both 0 when relevant_judged is 0);
-- recip_rank = 1 / the first relevant rank if <= k, else 0; success = 1 if found > 0.

create or replace temp view companions as
with

asked as (
    select
        coalesce(list_contains(getvariable('measures'), 'P'), false) as p_asked,
        coalesce(list_contains(getvariable('measures'), 'recall'), false) as recall_asked,
        coalesce(list_contains(getvariable('measures'), 'map'), false) as map_asked,
        coalesce(list_contains(getvariable('measures'), 'recip_rank'), false) as recip_rank_asked,
        coalesce(list_contains(getvariable('measures'), 'success'), false) as success_asked
),

-- found and precision_sum at each relevant rank of the evaluated ranking, in rank order (the
-- same bits on every run); next_rank says up to which cutoff they hold
numbered as (
    select
        retrieved.query_id,
        retrieved.rank,
        lead(retrieved.rank) over in_rank_order as next_rank,
        min(retrieved.rank) over (partition by retrieved.query_id) as first_rank,
        row_number() over in_rank_order as found
    from retrieved
    cross join asked
    where
        retrieved.ordering = 'retrieved'
        and retrieved.relevant
        and (asked.p_asked or asked.recall_asked or asked.map_asked or asked.recip_rank_asked or asked.success_asked)
    window in_rank_order as (partition by retrieved.query_id order by retrieved.rank)
),

cumulative as (
    select
        numbered.*,
        sum(numbered.found / numbered.rank) over (
            partition by numbered.query_id order by numbered.rank rows between unbounded preceding and current row
        ) as precision_sum
    from numbered
),

-- every judged query (the evaluated ones are among them) and its relevant documents
judged_queries as (
    select
        judgments.query_id,
        sum(case when judgments.relevant then 1 else 0 end) as relevant_judged
    from judgments
    cross join asked
    where asked.p_asked or asked.recall_asked or asked.map_asked or asked.recip_rank_asked or asked.success_asked
    group by judgments.query_id
),

final as (
    select
        judged_queries.query_id,
        cutoffs.k,
        case when asked.p_asked then coalesce(at_k.found, 0) / cutoffs.k end as "P",
        case
            when asked.recall_asked and judged_queries.relevant_judged > 0
                then coalesce(at_k.found, 0) / judged_queries.relevant_judged
            when asked.recall_asked then 0.0
        end as recall,
        case
            when asked.map_asked and judged_queries.relevant_judged > 0
                then coalesce(at_k.precision_sum, 0.0) / judged_queries.relevant_judged
            when asked.map_asked then 0.0
        end as map,
        case when asked.recip_rank_asked then coalesce(1.0 / at_k.first_rank, 0.0) end as recip_rank,
        case when asked.success_asked then cast(coalesce(at_k.found > 0, false) as double) end as success
    from judged_queries
    cross join asked
    cross join cutoffs
    -- the counts of the last relevant rank at or above k
    left join cumulative as at_k
        on judged_queries.query_id = at_k.query_id
        and (
            (cutoffs.k is null and at_k.next_rank is null)
            or (cutoffs.k is not null and cutoffs.k >= at_k.rank and coalesce(cutoffs.k < at_k.next_rank, true))
        )
)

select * from final;
