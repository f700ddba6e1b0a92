-- deduplicated.sql: the run's retrieved results, one row per (query, document), under the
-- duplicates policy.
--
-- Convention 7 of sql/measures/per_query.sql.
-- Reads: view run (query_id, doc_id, score, arrival, input_rank, doc_weight), e.g. from
-- sql/aligned_inputs.sql. arrival is any integer that increases in the order rows arrive;
-- input_rank is the input's own rank or null; doc_weight the result's weight (1 without one).
--
-- Variables:
--   SET VARIABLE duplicates = 'error';       -- or 'first' or 'max-score'
--   SET VARIABLE retrieved_scores = 'all';   -- 'positive': a result scored 0 or below is removed
--   SET VARIABLE doc_weight_col = NULL;      -- the engines' --doc-weight-col: a result weighing 0 removed
--
-- Creates: view deduplicated (query_id, doc_id, score, arrival bigint, input_rank double,
-- doc_weight double).
-- 'error': duplicates were refused before this runs (pipeline/validate.py), every row is
-- kept; 'first': the first copy to arrive; 'max-score': the highest score, then the first.
-- Under retrieved_scores 'positive' the row kept then counts only when scored above 0
-- (torchmetrics): the query stays evaluated (sql/counters/evaluated_queries.sql reads the run),
-- with an empty ranking when every result is removed.

create or replace temp view deduplicated as
with

-- every row of the run: each step is per query, so the queries without judgments are left
-- out of the evaluated queries (sql/counters/evaluated_queries.sql) rather than filtered out here (a join per row)
-- the run's weights read only under doc_weight_col: a statement printed for your own views (ndcg
-- sql) needs no such column, its branch cut once the variables are bound
run_rows as (
    select
        run.query_id,
        run.doc_id,
        run.score,
        cast(run.arrival as bigint) as arrival,
        cast(run.input_rank as double) as input_rank,
        cast(1.0 as double) as doc_weight
    from run
    where getvariable('doc_weight_col') is null
    union all
    select
        run.query_id,
        run.doc_id,
        run.score,
        cast(run.arrival as bigint) as arrival,
        cast(run.input_rank as double) as input_rank,
        cast(run.doc_weight as double) as doc_weight
    from run
    where getvariable('doc_weight_col') is not null
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
    select query_id, doc_id, score, arrival, input_rank, doc_weight
    from run_rows
    where coalesce(getvariable('duplicates'), 'error') = 'error'
    union all
    select query_id, doc_id, score, arrival, input_rank, doc_weight
    from numbered_copies
    where copy_number = 1
),

final as (
    select kept_copies.*
    from kept_copies
    where
        (coalesce(getvariable('retrieved_scores'), 'all') <> 'positive' or kept_copies.score > 0)
        -- TF-Ranking masks a result weighing 0 (doc_weight_col): it leaves the list, and takes no rank
        and (getvariable('doc_weight_col') is null or kept_copies.doc_weight > 0)
)

select * from final;
