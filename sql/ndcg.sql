-- ndcg.sql: the whole evaluation in the duckdb CLI: Parquet run + qrels -> printed summary.
--
-- Reads sql/inputs.sql, the steps of the per-query table (sql/cutoffs.sql ... sql/per_query.sql)
-- and sql/summary.sql, in order (run it from the repository root, where those paths resolve),
-- and prints the summary; the views run, qrels, summary, each step's view and the table
-- per_query stay defined for further queries, and sql/export.sql writes them out.
--
-- Variables: those of inputs.sql and of the steps. For the sample data:
--   duckdb -cmd "SET VARIABLE run_path = 'data/run.parquet'" \
--          -cmd "SET VARIABLE qrels_path = 'data/qrels.parquet'" \
--          -cmd "SET VARIABLE ks = [5, 10, 20]" \
--          -c ".read sql/ndcg.sql"
--
-- Output: the summary (k, queries, cg, dcg, idcg, ndcg), one row per cutoff; the row with
-- k null is the whole ranking.

.read sql/inputs.sql
.read sql/cutoffs.sql
.read sql/judgments.sql
.read sql/deduplicated.sql
.read sql/tie_orders.sql
.read sql/ranked.sql
.read sql/retrieved.sql
.read sql/rankings.sql
.read sql/running_sums.sql
.read sql/sums_at_cutoffs.sql
.read sql/evaluated_queries.sql
.read sql/relevance_curve.sql
.read sql/ideal_curve.sql
.read sql/gain_curve.sql
.read sql/counted.sql
.read sql/measures_trec.sql
.read sql/measures_curve.sql
.read sql/measures_gain.sql
.read sql/measures.sql
.read sql/per_query.sql
.read sql/summary.sql

from summary;
