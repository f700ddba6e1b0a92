-- ndcg.sql: the whole evaluation in the duckdb CLI: Parquet run + qrels -> printed summary.
--
-- Reads sql/inputs.sql, sql/per_query.sql and sql/summary.sql (run it from the repository
-- root, where those paths resolve) and prints the summary; the views run, qrels, per_query
-- and summary stay defined for further queries, and sql/export.sql writes them out.
--
-- Variables: those of inputs.sql and per_query.sql. For the sample data:
--   duckdb -cmd "SET VARIABLE run_path = 'data/run.parquet'" \
--          -cmd "SET VARIABLE qrels_path = 'data/qrels.parquet'" \
--          -cmd "SET VARIABLE ks = [5, 10, 20]" \
--          -c ".read sql/ndcg.sql"
--
-- Output: the summary (k, queries, cg, dcg, idcg, ndcg), one row per cutoff; the row with
-- k null is the whole ranking.

.read sql/inputs.sql
.read sql/per_query.sql
.read sql/summary.sql

from summary;
