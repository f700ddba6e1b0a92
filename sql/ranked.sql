-- ranked.sql: every result's position under the ties convention, with its gain.
--
-- Step 5 of the per-query table (conventions 1 and 2 of sql/per_query.sql).
-- Reads: views deduplicated (sql/deduplicated.sql), judgments (sql/judgments.sql) and
-- tie_orders (sql/tie_orders.sql).
--
-- Variables:
--   SET VARIABLE ties = 'docid-desc';        -- or 'input-order' or 'average'
--   SET VARIABLE unjudged = 'zero';          -- 'drop': every rank is kept, to renumber
--   SET VARIABLE ideal = 'judged';           -- 'judged-cut-at-hits': every rank is kept, to count
--   SET VARIABLE tie_bounds = true;          -- every rank is kept, and tie_orders added
--   SET VARIABLE signals = ['retrieved'];    -- with 'retrieved' (num_ret), every rank is kept
--
-- Creates: view ranked (ordering, query_id, score, input_rank, gain, judged, relevant,
-- nonrelevant, pooled, counted, position), the signals of sql/judgments.sql:
-- ordering 'retrieved' is the ranking by score, ties by doc_id desc in string order, or by
-- input_rank then arrival ('input-order'); 'worst' and 'best' come from tie_orders.

create or replace temp view ranked as
with

-- ranked before the gains are joined: the sort then carries fewer columns. Two selects
-- rather than one ordering switched by CASE keys: a key that folds to a constant null is
-- still compared on every row (measured 20% of the sort)
ranked_by_score as (
    select
        deduplicated.query_id,
        deduplicated.doc_id,
        deduplicated.score,
        deduplicated.input_rank,
        row_number() over (
            partition by deduplicated.query_id
            order by deduplicated.score desc, cast(deduplicated.doc_id as varchar) desc
        ) as position
    from deduplicated
    where coalesce(getvariable('ties'), 'docid-desc') <> 'input-order'
    union all
    select
        deduplicated.query_id,
        deduplicated.doc_id,
        deduplicated.score,
        deduplicated.input_rank,
        row_number() over (
            partition by deduplicated.query_id
            order by
                deduplicated.input_rank asc nulls last,
                deduplicated.score desc,
                deduplicated.arrival asc,
                cast(deduplicated.doc_id as varchar) desc
        ) as position
    from deduplicated
    where getvariable('ties') = 'input-order'
),

final as (
    select
        'retrieved' as ordering,
        ranked_by_score.query_id,
        ranked_by_score.score,
        ranked_by_score.input_rank,
        coalesce(judgments.gain, 0.0) as gain,
        coalesce(judgments.judged, false) as judged,
        coalesce(judgments.relevant, false) as relevant,
        coalesce(judgments.nonrelevant, false) as nonrelevant,
        coalesce(judgments.pooled, false) as pooled,
        coalesce(judgments.counted, false) as counted,
        ranked_by_score.position
    from ranked_by_score
    left join judgments
        on ranked_by_score.query_id = judgments.query_id and ranked_by_score.doc_id = judgments.doc_id
    -- When no later step reads a rank that earns nothing (no renumbering without the
    -- unjudged, no tie groups' mean gain, no count of the results, no tie bounds), only the
    -- ranks that earn are kept: the variables fold to constants, and the filter makes this an
    -- inner join with the judgments that gain something (a tenth of the rows at 10M), or
    -- that a counter counts (sql/sums_at_cutoffs.sql; by default a relevant label gains)
    where
        judgments.gain <> 0
        or judgments.counted
        or list_contains(coalesce(getvariable('signals'), ['retrieved']), 'retrieved')
        or coalesce(getvariable('unjudged'), 'zero') = 'drop'
        or getvariable('ties') = 'average'
        or getvariable('ideal') = 'judged-cut-at-hits'
        or coalesce(getvariable('tie_bounds'), false)
    union all
    select * from tie_orders
)

select * from final;
