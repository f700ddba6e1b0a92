-- export.sql: write the per-query table and the summary as Parquet files.
--
-- Input: views per_query and summary (run sql/ndcg.sql first).
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

copy (from per_query) to (getvariable('out_path') || '/per_query.parquet') (format parquet);

copy (from summary) to (getvariable('out_path') || '/summary.parquet') (format parquet);
