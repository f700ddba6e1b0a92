-- input_columns.sql: the columns the run and qrels files hold, read before sql/inputs.sql. Reads the variables of
-- sql/inputs.sql: run_path, qrels_path, query_col, doc_col, score_col, label_col, run_query_col, run_doc_col,
-- qrels_query_col, qrels_doc_col, qrels_label_col, doc_weight_col and doc_weights_in (the weight column,
-- --doc-weight-col, and its input). sql/ndcg.sql reads it first, so that a column the variables name and a file
-- lacks is refused in the command line's words (sql/generated/refusals.sql: the columns found, the variable to
-- set) rather than by DuckDB's binder; without it, sql/inputs.sql binds the names as given. Creates: views
-- run_file and qrels_file (the files as read; each path variable a path or a list of them, not necessarily alike:
-- read as JSON, of one type); sets the variables run_columns_found and qrels_columns_found (each file's column
-- names, in order) and run_columns_read and qrels_columns_read (the names sql/inputs.sql reads: query, doc, score
-- or label, weight; ndcg_absent, a null column, for a name the file lacks).
-- a text file (by its ending, as ndcg evaluate tells) refused in words before read_parquet; set below, so no row prints
set variable run_columns_found = (
    select
        error(
            texts.named || ': sql/ndcg.sql reads Parquet only, not ' || texts.text_format || '; read it with the '
            || 'table macros (ndcg_per_query) or ndcg evaluate, or convert it to Parquet'
        )
    from (
        select
            paths.named,
            replace(regexp_extract(lower(paths.named), '\.(txt|csv|tsv)$', 1), 'txt', 'trec') as text_format
        from (
            select unnest(from_json(
                '[' || trim(to_json(getvariable('run_path')), '[]') || ','
                || trim(coalesce(to_json(getvariable('qrels_path')), '""'), '[]') || ']',
                '["VARCHAR"]'
            )) as named
        ) as paths
    ) as texts
    where texts.text_format <> ''
    order by texts.named
    limit 1
);

create or replace temp view run_file as
from read_parquet(getvariable('run_path'), hive_partitioning = false);

create or replace temp view qrels_file as
from read_parquet(
    from_json(
        '[' || trim(coalesce(to_json(getvariable('qrels_path')), to_json(getvariable('run_path'))), '[]') || ']',
        '["VARCHAR"]'
    ),
    hive_partitioning = false
);

set variable run_columns_found = (
    select list(duckdb_columns.column_name order by duckdb_columns.column_index)
    from duckdb_columns()
    where duckdb_columns.database_name = 'temp' and duckdb_columns.table_name = 'run_file'
);

set variable qrels_columns_found = (
    select list(duckdb_columns.column_name order by duckdb_columns.column_index)
    from duckdb_columns()
    where duckdb_columns.database_name = 'temp' and duckdb_columns.table_name = 'qrels_file'
);

-- the names looked for, as sql/inputs.sql picks them (an input's own name, else the shared one)
set variable run_columns_read = list_transform(
    [
        coalesce(getvariable('run_query_col'), getvariable('query_col'), 'query_id'),
        coalesce(getvariable('run_doc_col'), getvariable('doc_col'), 'doc_id'),
        coalesce(getvariable('score_col'), 'score'),
        coalesce(if(
            getvariable('doc_weights_in') = 'qrels', null, cast(getvariable('doc_weight_col') as varchar)
        ), 'ndcg_absent')
    ],
    lambda name: case when list_contains(getvariable('run_columns_found'), name) then name else 'ndcg_absent' end
);

set variable qrels_columns_read = list_transform(
    [
        coalesce(
            case
                when getvariable('qrels_path') is null then getvariable('run_query_col')
                else getvariable('qrels_query_col')
            end,
            getvariable('query_col'),
            'query_id'
        ),
        coalesce(
            case
                when getvariable('qrels_path') is null then getvariable('run_doc_col')
                else getvariable('qrels_doc_col')
            end,
            getvariable('doc_col'),
            'doc_id'
        ),
        coalesce(
            case when getvariable('qrels_path') is not null then getvariable('qrels_label_col') end,
            getvariable('label_col'),
            'relevance'
        ),
        coalesce(if(
            getvariable('doc_weights_in') = 'qrels', cast(getvariable('doc_weight_col') as varchar), null
        ), 'ndcg_absent')
    ],
    lambda name: case when list_contains(getvariable('qrels_columns_found'), name) then name else 'ndcg_absent' end
);
