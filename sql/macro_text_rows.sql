-- macro_text_rows.sql: the rows of TREC and CSV/TSV text given to the table macros, from the
-- lines and fields of sql/macro_text_inputs.sql. Not run on its own: each view becomes a CTE of
-- the macros (sql/generated/macros.sql), read by sql/macro_inputs.sql through query_table.
-- Reads: views text_fields and text_headers; getvariable('doc_weight_col'). A TREC run's fields 1,
-- 3 and 5, a qrels line's 1, 3 and 4 and its subtopic 2; a CSV row's fields under the header's names
-- (a qrels' subtopic under 'subtopic', the weight under doc_weight_col: the run's, the qrels' when
-- getvariable('doc_weights_in') is 'qrels'). A value is a number as the command line reads it: a
-- double, of the text Polars casts to one (number's pattern below, found equal on 11,807 generated
-- strings; DuckDB's own cast also takes '1_000', '+-2' and ' 5'); a TREC line whose fields do not
-- parse gives nulls and ndcg_unparsed, as the command line's scan does.
-- Creates: views text_rows (both inputs' rows, value the score or label), run_text_rows (query_id,
-- doc_id, score) and qrels_text_rows (query_id, doc_id, relevance, subtopic), each with ndcg_weight
-- (ndcg_weight_text as written), ndcg_file, ndcg_line_number, ndcg_line, ndcg_unparsed, ndcg_value_text
-- (a CSV value as written), ndcg_fields (fields on the line), ndcg_expected_fields (the CSV header's)
-- and ndcg_first (the first line read of its file).

create or replace temp view text_rows as
select
    placed.input_role,
    if(placed.parsed, nullif(placed.line_fields[placed.query_at], '')) as query_id,
    if(placed.parsed, nullif(placed.line_fields[placed.doc_at], '')) as doc_id,
    if(placed.parsed, placed.numbers[1]) as value,
    if(placed.parsed, placed.numbers[2]) as ndcg_weight,
    nullif(placed.line_fields[placed.weight_at], '') as ndcg_weight_text,
    if(placed.parsed and placed.input_role = 'qrels', nullif(placed.line_fields[placed.subtopic_at], '')) as subtopic,
    if(placed.read_as <> 'trec', nullif(placed.line_fields[placed.value_at], '')) as ndcg_value_text,
    placed.source_file as ndcg_file,
    placed.line_number as ndcg_line_number,
    placed.line_text as ndcg_line,
    not placed.parsed as ndcg_unparsed,
    len(placed.line_fields) as ndcg_fields,
    len(placed.header_fields) as ndcg_expected_fields,
    placed.line_number = min(placed.line_number) over (partition by placed.source_file) as ndcg_first
from (
    select
        located.*,
        located.read_as <> 'trec'
        or (
            located.numbers[1] is not null
            and if(located.input_role = 'run', len(located.line_fields) >= 5, len(located.line_fields) = 4)
        ) as parsed
    from (
        select
            numbered.*,
            list_transform(
                [numbered.line_fields[numbered.value_at], numbered.line_fields[numbered.weight_at]],
                f -> if(
                    regexp_full_match(f, '[+-]?(([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?|(?i:inf|infinity|nan))'),
                    try_cast(f as double),
                    null
                )
            ) as numbers
        from (
            select
                text_fields.*,
                text_headers.header_fields,
                if(text_fields.read_as = 'trec', 1, list_position(text_headers.header_fields, 'query_id')) as query_at,
                if(text_fields.read_as = 'trec', 3, list_position(text_headers.header_fields, 'doc_id')) as doc_at,
                if(
                    text_fields.read_as = 'trec', 2, list_position(text_headers.header_fields, 'subtopic')
                ) as subtopic_at,
                case
                    when text_fields.read_as <> 'trec'
                        then list_position(
                            text_headers.header_fields, if(text_fields.input_role = 'run', 'score', 'relevance')
                        )
                    when text_fields.input_role = 'run' then 5
                    else 4
                end as value_at,
                if(
                    text_fields.read_as <> 'trec'
                    and text_fields.input_role = if(getvariable('doc_weights_in') = 'qrels', 'qrels', 'run'),
                    list_position(text_headers.header_fields, getvariable('doc_weight_col')),
                    null
                ) as weight_at
            from text_fields
            left join text_headers
                on
                text_fields.input_role = text_headers.input_role
                and text_fields.source_file = text_headers.source_file
            where text_fields.read_as = 'trec' or text_fields.line_number > 1
        ) as numbered
    ) as located
) as placed;

create or replace temp view run_text_rows as
select text_rows.* exclude (input_role, value, subtopic), text_rows.value as score  -- noqa: RF03
from text_rows
where text_rows.input_role = 'run';

create or replace temp view qrels_text_rows as
select
    text_rows.* exclude (input_role, value),  -- noqa: RF03
    text_rows.value as relevance
from text_rows
where text_rows.input_role = 'qrels';
