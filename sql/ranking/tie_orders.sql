-- tie_orders.sql: the worst and the best order of tied results, for the tie bounds.
--
-- ndcg_min and ndcg_max of sql/measures/per_query.sql. Reads: views deduplicated
-- (sql/ranking/deduplicated.sql) and judgments (sql/ranking/judgments.sql).
--
-- Variables:
--   SET VARIABLE tie_bounds = true;          -- unset or false: this view is empty
--   SET VARIABLE ties = 'docid-desc';        -- 'input-order' keeps the input rank first
--
-- Creates: view tie_orders (ordering 'worst' or 'best', query_id, doc_id, score, input_rank, label,
-- gain, position): 'worst' and 'best' break the same ties as the ranking by gain, ascending and
-- descending, the lowest and highest NDCG any order of the ties can give. They need the gains
-- before ranking; the whole view is pruned when tie_bounds is off. Results tied in score and
-- gain are put in doc_id desc order under either docid ties: their order changes no NDCG.

create or replace temp view tie_orders as
with

gained as (
    select
        deduplicated.*,
        judgments.label,
        coalesce(judgments.gain, 0.0) as gain
    from deduplicated
    left join judgments
        on deduplicated.query_id = judgments.query_id and deduplicated.doc_id = judgments.doc_id
    where coalesce(getvariable('tie_bounds'), false)
),

worst as (
    select
        'worst' as ordering,
        gained.query_id,
        gained.doc_id,
        gained.score,
        gained.input_rank,
        gained.label,
        gained.gain,
        row_number() over (
            partition by gained.query_id
            order by
                case when getvariable('ties') = 'input-order' then gained.input_rank end asc nulls last,
                gained.score desc,
                gained.gain asc,
                cast(gained.doc_id as varchar) desc
        ) as position
    from gained
),

best as (
    select
        'best' as ordering,
        gained.query_id,
        gained.doc_id,
        gained.score,
        gained.input_rank,
        gained.label,
        gained.gain,
        row_number() over (
            partition by gained.query_id
            order by
                case when getvariable('ties') = 'input-order' then gained.input_rank end asc nulls last,
                gained.score desc,
                gained.gain desc,
                cast(gained.doc_id as varchar) desc
        ) as position
    from gained
),

final as (
    select * from worst
    union all
    select * from best
)

select * from final;
