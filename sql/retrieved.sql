-- retrieved.sql: the results that count, their rank, and the gain each rank earns.
--
-- Step 6 of the per-query table (conventions 1, 5 and 6 of sql/per_query.sql).
-- Reads: view ranked (sql/ranked.sql).
--
-- Variables:
--   SET VARIABLE max_results = 1000;         -- unset: keep every result (trec_eval -M)
--   SET VARIABLE unjudged = 'zero';          -- or 'drop' (trec_eval -J), after max_results
--   SET VARIABLE ties = 'docid-desc';        -- 'average': tied results share their mean gain
--
-- Creates: view retrieved (ordering, query_id, score, input_rank, rank, gain, credited_gain,
-- and the signals judged, relevant, nonrelevant, pooled, counted of sql/judgments.sql):
-- rank is the position, renumbered when unjudged results were dropped; credited_gain is
-- what the rank earns.

create or replace temp view retrieved as
with

kept as (
    select ranked.*
    from ranked
    where
        (getvariable('max_results') is null or ranked.position <= getvariable('max_results'))
        and (coalesce(getvariable('unjudged'), 'zero') <> 'drop' or ranked.judged)
),

final as (
    select
        kept.ordering,
        kept.query_id,
        kept.score,
        kept.input_rank,
        -- renumbered only when unjudged rows were dropped; otherwise the position is the rank
        case
            when getvariable('unjudged') = 'drop'
                then row_number() over (
                    partition by kept.ordering, kept.query_id
                    order by kept.position
                )
            else kept.position
        end as rank,
        kept.gain,
        -- what the rank earns: its own gain, or its tie group's mean gain (the tie bounds'
        -- orderings are orders of the ties, so their ranks earn their own gains)
        case
            when getvariable('ties') = 'average' and kept.ordering = 'retrieved'
                then avg(kept.gain) over (
                    partition by kept.ordering, kept.query_id, kept.score
                )
            else kept.gain
        end as credited_gain,
        kept.judged,
        kept.relevant,
        kept.nonrelevant,
        kept.pooled,
        kept.counted
    from kept
)

select * from final;
