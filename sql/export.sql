-- export.sql: write the per-query table and the summary as Parquet files.
--
-- Input: views per_query and weighted_summary (the summary, its means weighted when
-- query_weights_path or doc_weight_col is set), and the variable refusals_verdict (run sql/ndcg.sql
-- first); nothing is written when the inputs or the variables were refused. Creates: table export_summary.
-- Variables:
--   SET VARIABLE out_path = 'out/sql';   -- an existing directory
--
-- Writes: <out_path>/per_query.parquet and <out_path>/summary.parquet.
--
-- Hive-partitioned logs (runs/dt=2026-11-21/...): evaluate one partition at a time by
-- pointing run_path into its folder (DuckDB then opens no other partition) and writing to a
-- folder of the same name, as `make eval-sql` does for data/runs/:
--   SET VARIABLE run_path = 'data/runs/dt=2026-11-21/*.parquet';
--   SET VARIABLE qrels_path = 'data/qrels.parquet';
--   SET VARIABLE ks = [5, 10, 20];
--   SET VARIABLE out_path = 'out/sql/dt=2026-11-21';   -- create the folder first
--   .read sql/ndcg.sql
--   .read sql/export.sql
-- Query ids are only unique within a day in most logs, so partitions are never mixed in
-- one evaluation.

-- the summary first, into a table: a refusal found only as it is computed (query weights or list
-- weights whose means are 0/0) stops the export before any file is written; the copies below
-- read the table, so with it missing (dropped here, not made) they write nothing either
drop table if exists export_summary;

create temp table export_summary as
from weighted_summary
where coalesce(
    getvariable('refusals_verdict') = 0,
    error('the inputs or the variables were refused (the error above): nothing is written')
);

copy (
    from per_query
    where (select count(*) from export_summary) >= 0
)
to (getvariable('out_path') || '/per_query.parquet') (format parquet);

copy (from export_summary)
to (getvariable('out_path') || '/summary.parquet') (format parquet);
