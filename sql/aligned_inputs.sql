-- aligned_inputs.sql: the views run and qrels that the steps read, from the inputs as given.
--
-- Reads: views run_given and qrels_given (sql/inputs.sql over Parquet files, sql/macro_inputs.sql
-- in the table macros). Read after them by sql/ndcg.sql, the DuckDB engine and the macros.
--
-- Creates: view run (query_id, doc_id, score, arrival, input_rank), view qrels (query_id, doc_id,
-- relevance, subtopic: text, null where the judgments are not per subtopic): one id type for
-- both inputs, the type a union gives them (text against an integer, the wider of two
-- integers), as the engines align them, and scores and labels as doubles, so
-- that the steps bind whatever the inputs hold; sql/generated/refusals.sql names what is wrong
-- with them. input_rank is null: to use a rank column with ties = 'input-order', define the run
-- view yourself.

create or replace temp view run as
select
    aligned.query_id,
    aligned.doc_id,
    try_cast(aligned.score as double) as score,
    aligned.arrival,
    cast(null as double) as input_rank
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
