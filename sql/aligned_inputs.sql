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
-- with them. input_rank is null: to use a rank column with ties = 'input-order' (refused with one,
-- sql/generated/refusals.sql), define the run view yourself. doc_weight is the weight column
-- doc_weight_col (--doc-weight-col) as a double, or 1 without one: the run's, or with doc_weights_in = 'qrels'
-- each result's judgment's (unjudged_weight where none).

create or replace temp view run as
with

-- the judgments' weights (doc_weights_in = 'qrels'), one a document; ids as text, as the union aligns them
judged as (
    select
        cast(qrels_given.query_id as varchar) as query_id,
        cast(qrels_given.doc_id as varchar) as doc_id,
        min(try_cast(qrels_given.doc_weight as double)) as weight
    from qrels_given
    where getvariable('doc_weights_in') = 'qrels'
    group by cast(qrels_given.query_id as varchar), cast(qrels_given.doc_id as varchar)
),

aligned as (
    select run_given.query_id, run_given.doc_id, run_given.score, run_given.arrival, run_given.doc_weight
    from run_given
    union all
    select qrels_given.query_id, qrels_given.doc_id, null as score, null as arrival, null as doc_weight
    from qrels_given
    where false
)

select
    aligned.query_id,
    aligned.doc_id,
    try_cast(aligned.score as double) as score,
    aligned.arrival,
    cast(null as double) as input_rank,
    -- the weights (doc_weight_col), checked by sql/generated/refusals.sql; each result weighs 1 without
    case
        when getvariable('doc_weight_col') is null then 1.0
        when getvariable('doc_weights_in') = 'qrels' then coalesce(judged.weight, getvariable('unjudged_weight'))
        else try_cast(aligned.doc_weight as double)
    end as doc_weight
from aligned
left join judged
    on cast(aligned.query_id as varchar) = judged.query_id and cast(aligned.doc_id as varchar) = judged.doc_id;

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
