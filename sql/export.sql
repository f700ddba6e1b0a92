-- export.sql: write the per-query table and the summary as Parquet files.
--
-- Input: views per_query and summary (run sql/ndcg.sql first).
-- Variables:
--   SET VARIABLE out_path = 'out/sql';   -- an existing directory
--
-- Writes: <out_path>/per_query.parquet and <out_path>/summary.parquet.

copy (from per_query) to (getvariable('out_path') || '/per_query.parquet') (format parquet);

copy (from summary) to (getvariable('out_path') || '/summary.parquet') (format parquet);
