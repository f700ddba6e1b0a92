-- ndcg.sql: the whole evaluation in the duckdb CLI: Parquet run + qrels -> printed summary.
--
-- Reads sql/generated/variable_types.sql (a variable of another type, refused first), sql/input_columns.sql,
-- sql/inputs.sql, sql/aligned_inputs.sql, sql/generated/derived_variables.sql (what the registry derives),
-- sql/generated/refusals.sql (what the command line would refuse, in its words, before any number), the steps
-- of the per-query table in order (sql/ranking/, sql/counters/, sql/curves/, sql/measures/), sql/summary.sql
-- (run it from the repository root), and prints the summary; the views run, qrels, summary, each step's view
-- (rankings, counted: over tables) and the table per_query stay defined; sql/export.sql writes them.
--
-- Variables: those of inputs.sql, of the steps and allow_fractional_labels (refusals.sql); it
-- sets refusals_verdict (0 when nothing is refused), which sql/export.sql reads. For the sample data:
--   duckdb -cmd "SET VARIABLE run_path = 'data/run.parquet'" -cmd "SET VARIABLE qrels_path = 'data/qrels.parquet'" \
--          -cmd "SET VARIABLE ks = [5, 10, 20]" -c ".read sql/ndcg.sql"
-- With query_weights_path or doc_weight_col set, the summary's means are weighted as `ndcg evaluate
-- --query-weights` or --doc-weight-col weighs them (the files read after sql/summary.sql; the same refusals).
-- Output: the summary (k, queries, cg, dcg, idcg, ndcg, then the measures asked, and the tie bounds'
-- columns when the variable tie_bounds is true), one row per cutoff; the row with k null is the whole ranking.

.read sql/generated/variable_types.sql
.read sql/input_columns.sql
.read sql/inputs.sql
.read sql/aligned_inputs.sql
.read sql/generated/derived_variables.sql
.read sql/generated/refusals.sql
-- the verdict, once, before any step runs: the first rule the inputs or variables break is an
-- error here, in the command line's words (and the verdict stays unset, so nothing below prints)
RESET VARIABLE refusals_verdict;
SET VARIABLE refusals_verdict = (select count(refused) from refusals);
-- the aligned inputs read once into tables: every step reads run and qrels, and DuckDB binds a
-- view again at each reference (through the union that aligns the ids: 2.7 s against 1.2 s on
-- the sample, all of it binding)
create or replace temp table run_aligned as from run;
create or replace temp table qrels_aligned as from qrels;
create or replace temp view run as from run_aligned;
create or replace temp view qrels as from qrels_aligned;
.read sql/ranking/cutoffs.sql
.read sql/ranking/judgments.sql
.read sql/ranking/deduplicated.sql
.read sql/ranking/tie_orders.sql
.read sql/ranking/ranked.sql
.read sql/ranking/retrieved.sql
.read sql/ranking/ideal.sql
.read sql/ranking/rankings.sql
-- the rankings and the counted rows kept in tables, read through their views: DuckDB binds a view
-- again at each reference, and every later step reads these (4.3 s against 1.2 s on the sample, most
-- of it binding); nothing is computed once the inputs or variables were refused
create or replace temp table rankings_rows as from rankings where coalesce(getvariable('refusals_verdict') = 0, false);
create or replace temp view rankings as from rankings_rows;
.read sql/counters/signals.sql
.read sql/counters/running_sums.sql
.read sql/counters/sums_at_cutoffs.sql
.read sql/counters/evaluated_queries.sql
.read sql/counters/counters.sql
.read sql/curves/relevance_curve.sql
.read sql/curves/ideal_curve.sql
.read sql/curves/gain_curve.sql
.read sql/curves/cascade_curve.sql
.read sql/curves/intent_pairs.sql
.read sql/curves/intent_greedy.sql
.read sql/curves/intent_ideal.sql
.read sql/curves/intent_curve.sql
.read sql/curves/cwl_gains.sql
.read sql/curves/user_model_curve.sql
.read sql/curves/nerr_runs.sql
.read sql/curves/nerr_curve.sql
.read sql/curves/target_runs.sql
.read sql/curves/target_curve.sql
.read sql/curves/bpm_curve.sql
.read sql/curves/compat_curve.sql
.read sql/curves/weighted_ap_curve.sql
.read sql/curves/threshold_curve.sql
.read sql/measures/counted.sql
create or replace temp table counted_rows as from counted where coalesce(getvariable('refusals_verdict') = 0, false);
create or replace temp view counted as from counted_rows;
.read sql/measures/set_measures.sql
.read sql/measures/curve_measures.sql
.read sql/measures/gain_measures.sql
.read sql/measures/top_k_measures.sql
.read sql/measures/intent_measures.sql
.read sql/measures/measures.sql
.read sql/measures/per_query.sql
.read sql/summary.sql
.read sql/query_weights.sql
.read sql/query_weight_rules.sql
.read sql/list_weights.sql
.read sql/list_weight_range.sql
.read sql/list_weighted_summary.sql
.read sql/weighted_summary.sql

-- the columns asked for: the tie bounds' only under tie_bounds (the measures' are narrowed by the summary)
select
    columns(
        lambda c: not list_contains(['ndcg_min', 'ndcg_max', 'tie_sensitive_queries'], c)
        or coalesce(getvariable('tie_bounds'), false)
    )
from weighted_summary
where coalesce(
    getvariable('refusals_verdict') = 0,
    error('the inputs or the variables were refused (the error above): nothing is evaluated')
);
