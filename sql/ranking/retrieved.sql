-- retrieved.sql: the results that count, their rank, and the gain each rank earns.
--
-- Conventions 1, 5 and 6 of sql/measures/per_query.sql. Reads: view ranked (sql/ranking/ranked.sql).
--
-- Variables:
--   SET VARIABLE max_results = 1000;         -- unset: keep every result (trec_eval -M)
--   SET VARIABLE unjudged = 'zero';          -- or 'drop' (trec_eval -J), after max_results
--   SET VARIABLE ties = 'docid-desc';        -- 'average': tied results share their mean gain
--
-- Creates: view retrieved (ordering, query_id, doc_id, score, input_rank, rank, label, gain,
-- credited_gain): rank is the position, renumbered when unjudged results (absent from the
-- judgments, or labelled below 0) were dropped; credited_gain is what the rank earns.

create or replace temp view retrieved as
with

kept as (
    select ranked.*
    from ranked
    where
        (getvariable('max_results') is null or ranked.position <= getvariable('max_results'))
        and (coalesce(getvariable('unjudged'), 'zero') <> 'drop' or coalesce(ranked.label >= 0, false))
),

final as (
    select
        kept.ordering,
        kept.query_id,
        kept.doc_id,
        kept.score,
        kept.input_rank,
        -- renumbered only when unjudged rows were dropped; otherwise the position is the rank
        case
            when getvariable('unjudged') = 'drop'
                then row_number() over (
                    partition by kept.ordering, kept.query_id
                    order by kept.position asc
                )
            else kept.position
        end as rank,
        kept.label,
        kept.gain,
        -- what the rank earns: its own gain, or its tie group's mean gain (the tie bounds'
        -- orderings are orders of the ties, so their ranks earn their own gains)
        case
            when getvariable('ties') = 'average' and kept.ordering = 'retrieved'
                then avg(kept.gain) over (
                    partition by kept.ordering, kept.query_id, kept.score
                )
            else kept.gain
        end as credited_gain
    from kept
)

select * from final;
