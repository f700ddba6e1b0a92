-- macro_qrels_inputs.sql: the qrels of the table macros ndcg_per_query and ndcg_summary, as
-- sql/macro_inputs.sql reads the run (its header says how: a table, view or Parquet through
-- query_table, TREC or CSV/TSV text through the views of sql/macro_text_inputs.sql and
-- sql/macro_text_rows.sql). Not run on its own: the view becomes a CTE of the macros.
-- Reads getvariable('qrels_table') and getvariable('qrels_source'), as sql/macro_inputs.sql reads the
-- run's. The judgments' weights under getvariable('doc_weights_in') = 'qrels': a table's column
-- getvariable('doc_weight_col') in its own type, CSV text's parsed (as written in ndcg_weight_text).
-- Creates: view qrels_given, as sql/inputs.sql does, with the line of each row read from text (null for
-- a table); the subtopic is text, null where none.

create or replace temp view qrels_given as
select
    qrels_rows.query_id,
    qrels_rows.doc_id,
    qrels_rows.relevance,
    cast(qrels_rows.subtopic as varchar) as subtopic,
    qrels_rows.ndcg_weight_read as doc_weight,
    qrels_rows.ndcg_weight_text,
    cast(0 as bigint) as arrival,
    qrels_rows.ndcg_file,
    qrels_rows.ndcg_line_number,
    qrels_rows.ndcg_line,
    qrels_rows.ndcg_unparsed,
    qrels_rows.ndcg_value_text,
    qrels_rows.ndcg_fields,
    qrels_rows.ndcg_expected_fields,
    qrels_rows.ndcg_first
from (
    select  -- noqa: AM07
        null as query_id,
        null as doc_id,
        null as relevance,
        null as subtopic,
        null as ndcg_file,
        null as ndcg_line_number,
        null as ndcg_line,
        null as ndcg_unparsed,
        null as ndcg_value_text,
        null as ndcg_fields,
        null as ndcg_expected_fields,
        null as ndcg_first,
        null as ndcg_weight_text
    where false
    union all by name
    select
        columns(lambda c: not (getvariable('qrels_table') and starts_with(lower(c), 'ndcg_'))),  -- noqa: RF02
        coalesce(*columns(
            lambda c: c = 'ndcg_no_weight_column'  -- noqa: RF02
            or if(
                getvariable('qrels_table'),
                c = getvariable('doc_weight_col') and getvariable('doc_weights_in') = 'qrels',
                c = 'ndcg_weight'
            )
        )) as ndcg_weight_read
    from (
        select
            columns(  -- noqa: RF02
                lambda c: not getvariable('qrels_table') or not starts_with(lower(c), 'ndcg_')
                or c = getvariable('doc_weight_col')
            )
        from query_table(getvariable('qrels_source'))
    ) as given, (select null as ndcg_no_weight_column) as absent
) as qrels_rows;
