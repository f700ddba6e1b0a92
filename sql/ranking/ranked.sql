-- ranked.sql: every result's position under the ties convention, with its label and gain.
--
-- Conventions 1 and 2 of sql/measures/per_query.sql. Reads: views deduplicated
-- (sql/ranking/deduplicated.sql), judgments (sql/ranking/judgments.sql) and tie_orders
-- (sql/ranking/tie_orders.sql).
--
-- Variables:
--   SET VARIABLE ties = 'docid-desc';        -- or 'docid-asc', 'input-order' or 'average'
--   SET VARIABLE unjudged = 'zero';          -- 'drop': every rank is kept, to renumber
--   SET VARIABLE ideal = 'judged';           -- 'judged-cut-at-hits': every rank is kept, to count
--   SET VARIABLE tie_bounds = true;          -- every rank is kept, and tie_orders added
--   SET VARIABLE count_retrieved = true;     -- num_ret: every rank is kept, to count
--   SET VARIABLE signals = ['relevant'];     -- some: every judged rank is kept, for its signals
-- Creates: view ranked (ordering, query_id, doc_id, score, input_rank, label, gain, position): gain
-- times the result's doc_weight (1 without doc_weight_col: TF-Ranking's weights); ordering
-- 'retrieved' is the ranking by score, ties by doc_id desc in string order (asc under
-- 'docid-asc'), or by input_rank then arrival ('input-order'); 'worst' and 'best' come from
-- tie_orders. label is null for a document the judgments do not list.

create or replace temp view ranked as
with

-- ranked before the gains are joined (fewer columns sorted). A select per ordering, not CASE
-- keys: a key that folds to a constant null is still compared on every row (20% of the sort)
ranked_by_score as (
    select
        deduplicated.query_id,
        deduplicated.doc_id,
        deduplicated.score,
        deduplicated.input_rank,
        deduplicated.doc_weight,
        row_number() over (
            partition by deduplicated.query_id
            order by deduplicated.score desc, cast(deduplicated.doc_id as varchar) desc
        ) as position
    from deduplicated
    where coalesce(getvariable('ties'), 'docid-desc') not in ('input-order', 'docid-asc')
    union all
    select
        deduplicated.query_id,
        deduplicated.doc_id,
        deduplicated.score,
        deduplicated.input_rank,
        deduplicated.doc_weight,
        row_number() over (
            partition by deduplicated.query_id
            order by deduplicated.score desc, cast(deduplicated.doc_id as varchar) asc
        ) as position
    from deduplicated
    where getvariable('ties') = 'docid-asc'
    union all
    select
        deduplicated.query_id,
        deduplicated.doc_id,
        deduplicated.score,
        deduplicated.input_rank,
        deduplicated.doc_weight,
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
        ranked_by_score.doc_id,
        ranked_by_score.score,
        ranked_by_score.input_rank,
        judgments.label,
        coalesce(judgments.gain, 0.0) * ranked_by_score.doc_weight as gain,
        ranked_by_score.position
    from ranked_by_score
    left join judgments
        on ranked_by_score.query_id = judgments.query_id and ranked_by_score.doc_id = judgments.doc_id
    -- When no later step reads a rank that earns nothing (no renumbering without the
    -- unjudged, no tie groups' mean gain, no count of the results, no tie bounds), only the
    -- ranks that earn are kept, and with signals asked the judged ones too (sql/counters/
    -- signals.sql): the variables fold to constants, and the filter makes this an inner join
    -- with the judgments that gain something (a tenth of the rows at 10M)
    where
        judgments.gain <> 0
        or (array_length(getvariable('signals')) > 0 and judgments.label is not null)
        or coalesce(getvariable('count_retrieved'), false)
        or coalesce(getvariable('unjudged'), 'zero') = 'drop'
        or getvariable('ties') = 'average'
        or getvariable('ideal') = 'judged-cut-at-hits'
        or coalesce(getvariable('tie_bounds'), false)
    union all
    select * from tie_orders
)

select * from final;
