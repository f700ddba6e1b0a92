-- aligned_inputs.sql: the views run and qrels that the steps read, from the inputs as given.
--
-- Reads: views run_given and qrels_given (sql/inputs.sql over Parquet files, sql/macro_inputs.sql
-- in the table macros). Read after them by sql/ndcg.sql, the DuckDB engine and the macros.
--
-- Creates: view run (query_id, doc_id, score, arrival, input_rank, doc_weight), view qrels (query_id, doc_id,
-- relevance, subtopic: text, null where the judgments are not per subtopic): one id type for
-- both inputs, the type a union gives them (text against an integer, the wider of two
-- integers), as the engines align them, and scores and labels as doubles, so
-- that the steps bind whatever the inputs hold; sql/generated/refusals.sql names what is wrong
-- with them. input_rank is null: to use a rank column with ties = 'input-order', define the run
-- view yourself. doc_weight is 1: the run's weights (variable doc_weight_col, --doc-weight-col) are
-- read and checked by the engines of ndcg evaluate alone, and refused here by name.

create or replace temp view run as
select
    aligned.query_id,
    aligned.doc_id,
    try_cast(aligned.score as double) as score,
    aligned.arrival,
    cast(null as double) as input_rank,
    -- every result weighs 1: the run's weights are read and checked by the engines alone, refused here by name
    cast(
        case
            when getvariable('doc_weight_col') is null then 1.0
            else error(
                'doc_weight_col = ''' || getvariable('doc_weight_col') || ''' is not supported by sql/ndcg.sql and '
                || 'the table macros: the run''s per-document weights are read and checked by the polars and '
                || 'duckdb engines; use ndcg evaluate --doc-weight-col with --engine polars or duckdb'
            )
        end as double
    ) as doc_weight
from (
    select run_given.query_id, run_given.doc_id, run_given.score, run_given.arrival from run_given
    union all
    select qrels_given.query_id, qrels_given.doc_id, null as score, null as arrival from qrels_given
    where false
) as aligned;

create or replace temp view qrels as
select
    aligned.query_id,
    aligned.doc_id,
    try_cast(aligned.relevance as double) as relevance,
    cast(aligned.subtopic as varchar) as subtopic
from (
    select qrels_given.query_id, qrels_given.doc_id, qrels_given.relevance, qrels_given.subtopic from qrels_given
    union all
    select run_given.query_id, run_given.doc_id, null as relevance, null as subtopic from run_given
    where false
) as aligned;
