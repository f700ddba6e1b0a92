-- deduplicated.sql: the run's retrieved results, one row per (query, document), under the
-- duplicates policy.
--
-- Convention 7 of sql/measures/per_query.sql.
-- Reads: view run (query_id, doc_id, score, arrival, input_rank), e.g. from sql/inputs.sql.
-- arrival is any integer that increases in the order rows arrive; input_rank is the
-- input's own rank or null.
--
-- Variables:
--   SET VARIABLE duplicates = 'error';       -- or 'first' or 'max-score'
--   SET VARIABLE retrieved_scores = 'all';   -- 'positive': a result scored 0 or below is removed
--
-- Creates: view deduplicated (query_id, doc_id, score, arrival bigint, input_rank double).
-- 'error': duplicates were refused before this runs (pipeline/validate.py), every row is
-- kept; 'first': the first copy to arrive; 'max-score': the highest score, then the first.
-- Under retrieved_scores 'positive' the row kept then counts only when scored above 0
-- (torchmetrics): the query stays evaluated (sql/counters/evaluated_queries.sql reads the run),
-- with an empty ranking when every result is removed.

create or replace temp view deduplicated as
with

-- every row of the run: each step is per query, so the queries without judgments are left
-- out of the evaluated queries (sql/counters/evaluated_queries.sql) rather than filtered out here (a join per row)
run_rows as (
    select
        run.query_id,
        run.doc_id,
        run.score,
        cast(run.arrival as bigint) as arrival,
        cast(run.input_rank as double) as input_rank
    from run
),

numbered_copies as (
    select
        run_rows.*,
        row_number() over (
            partition by run_rows.query_id, run_rows.doc_id
            order by
                case when getvariable('duplicates') = 'max-score' then run_rows.score end desc nulls last,
                run_rows.arrival asc
        ) as copy_number
    from run_rows
    -- with duplicates refused upstream there is nothing to number
    where coalesce(getvariable('duplicates'), 'error') <> 'error'
),

kept_copies as (
    select query_id, doc_id, score, arrival, input_rank
    from run_rows
    where coalesce(getvariable('duplicates'), 'error') = 'error'
    union all
    select query_id, doc_id, score, arrival, input_rank
    from numbered_copies
    where copy_number = 1
),

final as (
    select kept_copies.*
    from kept_copies
    where coalesce(getvariable('retrieved_scores'), 'all') <> 'positive' or kept_copies.score > 0
)

select * from final;
