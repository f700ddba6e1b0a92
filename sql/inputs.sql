-- inputs.sql: Parquet run and qrels as the views run_given and qrels_given with canonical columns.
-- Reads a Parquet file, a directory, a glob or a list of them. Hive partitioning is off: a
-- dt=2026-11-21/ folder's value never replaces a data column (the job adds partition keys
-- itself, from its own listing). Columns are picked by name from variables (never SQL text).
-- Variables (only run_path is required): run_path and qrels_path, Parquet paths, globs or lists
-- (qrels_path unset: inline labels, the run's label column); query_col, doc_col, score_col,
-- label_col (default query_id, doc_id, score, relevance), the names in both files, under
-- run_query_col, run_doc_col, qrels_query_col, qrels_doc_col, qrels_label_col (one file's own
-- name; inline labels: the run's); doc_weight_col (the weight column; unset: none), of the run or,
-- with doc_weights_in = 'qrels', of the qrels. In the duckdb CLI, from the repository root:
--   SET VARIABLE run_path = 'data/run.parquet';
--   .read sql/input_columns.sql
--   .read sql/inputs.sql
-- (sql/input_columns.sql sets run_columns_read and qrels_columns_read.) Creates: views run_given (query_id,
-- doc_id, score, doc_weight, arrival) and qrels_given (query_id, doc_id, relevance, doc_weight, subtopic,
-- arrival), the inputs as the files hold them, which sql/aligned_inputs.sql turns into the views run and
-- qrels the steps read; arrival increases in input order (files in the order given, then rows in a file).

create or replace temp view run_given as
select
    columns(
        lambda c: c = coalesce(
            getvariable('run_columns_read')[1], getvariable('run_query_col'), getvariable('query_col'), 'query_id'
        )
    ) as query_id,
    columns(
        lambda c: c = coalesce(
            getvariable('run_columns_read')[2], getvariable('run_doc_col'), getvariable('doc_col'), 'doc_id'
        )
    ) as doc_id,
    columns(lambda c: c = coalesce(getvariable('run_columns_read')[3], getvariable('score_col'), 'score')) as score,
    columns(lambda c: c = coalesce(
        getvariable('run_columns_read')[4],
        if(getvariable('doc_weights_in') = 'qrels', null, cast(getvariable('doc_weight_col') as varchar)),
        'ndcg_absent'
    )) as doc_weight,
    -- only the order matters: file first, then row (2^32 rows per file is beyond any input)
    cast(file_index as bigint) * 4294967296 + file_row_number as arrival
from (
    -- ndcg_absent: what a column the file lacks is read as, refused (sql/input_columns.sql)
    select *, file_index, file_row_number, cast(null as varchar) as ndcg_absent  -- noqa: LT09
    from read_parquet(getvariable('run_path'), hive_partitioning = false)
) as run_rows;

-- with inline labels (no qrels_path) the qrels are the run file, under the run's names
create or replace temp view qrels_given as
select
    columns(
        lambda c: c = coalesce(
            getvariable('qrels_columns_read')[1],
            if(getvariable('qrels_path') is null, getvariable('run_query_col'), getvariable('qrels_query_col')),
            getvariable('query_col'),
            'query_id'
        )
    ) as query_id,
    columns(
        lambda c: c = coalesce(
            getvariable('qrels_columns_read')[2],
            if(getvariable('qrels_path') is null, getvariable('run_doc_col'), getvariable('qrels_doc_col')),
            getvariable('doc_col'),
            'doc_id'
        )
    ) as doc_id,
    columns(
        lambda c: c = coalesce(
            getvariable('qrels_columns_read')[3],
            case when getvariable('qrels_path') is not null then getvariable('qrels_label_col') end,
            getvariable('label_col'),
            'relevance'
        )
    ) as relevance,
    columns(lambda c: c = coalesce(  -- the judgments' weights: each result takes its judgment's (aligned_inputs.sql)
        getvariable('qrels_columns_read')[4],
        if(getvariable('doc_weights_in') = 'qrels', cast(getvariable('doc_weight_col') as varchar), null),
        'ndcg_absent'
    )) as doc_weight,
    -- judgments per subtopic: the qrels' column subtopic, as text (null: none; inline labels have none)
    cast(
        case when getvariable('qrels_path') is not null then columns(lambda c: c = 'subtopic') end as varchar
    ) as subtopic,
    cast(file_index as bigint) * 4294967296 + file_row_number as arrival
from (
    select *, file_index, file_row_number, cast(null as varchar) as ndcg_absent  -- noqa: LT09
    -- each path variable a path or a list of them, not necessarily alike: as JSON, of one type
    from
        read_parquet(
            from_json(
                '['
                || trim(coalesce(to_json(getvariable('qrels_path')), to_json(getvariable('run_path'))), '[]')
                || ']',
                '["VARCHAR"]'
            ),
            hive_partitioning = false
        )
    -- a file without the column gets it, null (union by name fills a missing column)
    union all by name
    select cast(null as varchar) as subtopic
    where false
) as qrels_rows;
