-- inputs.sql: Parquet run and qrels as the views `run` and `qrels` with canonical columns.
--
-- Reads a Parquet file, a directory, a glob or a list of them; hive partition folders
-- (dt=2026-11-21/...) are detected by DuckDB. Columns are picked by name from variables, so
-- user column names never become SQL text.
--
-- Variables (only run_path is required):
--   run_path    Parquet path, glob or list of them
--   qrels_path  Parquet path, glob or list; unset = inline labels: the run's label column
--   query_col, doc_col, score_col, label_col   column names (default query_id, doc_id,
--               score, relevance); the same names are used in both files
--
-- Run from the repository root in the duckdb CLI:
--   SET VARIABLE run_path = 'data/run.parquet';
--   SET VARIABLE qrels_path = 'data/qrels.parquet';
--   .read sql/inputs.sql
--
-- Creates: view run (query_id, doc_id, score), view qrels (query_id, doc_id, relevance).

create or replace temp view run as
select
    columns(lambda c: c = coalesce(getvariable('query_col'), 'query_id')) as query_id,
    columns(lambda c: c = coalesce(getvariable('doc_col'), 'doc_id')) as doc_id,
    columns(lambda c: c = coalesce(getvariable('score_col'), 'score')) as score
from read_parquet(getvariable('run_path'));

create or replace temp view qrels as
select
    columns(lambda c: c = coalesce(getvariable('query_col'), 'query_id')) as query_id,
    columns(lambda c: c = coalesce(getvariable('doc_col'), 'doc_id')) as doc_id,
    columns(lambda c: c = coalesce(getvariable('label_col'), 'relevance')) as relevance
from read_parquet(coalesce(getvariable('qrels_path'), getvariable('run_path')));
