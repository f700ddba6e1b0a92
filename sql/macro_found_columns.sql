-- macro_found_columns.sql: what the table macros' inputs hold beside their rows, for the refusals
-- (pipeline/sql_text_refusals.py) of a column or a file that is not there, in the command line's
-- words rather than DuckDB's binder error. Not run on its own: each view becomes a CTE of the
-- macros (sql/generated/macros.sql), before those of sql/macro_inputs.sql.
--
-- Reads: getvariable('run_source') and getvariable('qrels_source') (what query_table reads, as
-- sql/macro_inputs.sql), getvariable('run_paths') and getvariable('qrels_paths') (the argument as
-- a list of names), written in by pipeline/macros.py; views text_headers and text_lines.
--
-- Creates: view ndcg_no_input (no rows: what query_table reads for an argument that is no name
-- or path), views run_found_columns and qrels_found_columns (found: a CSV file's header, else the
-- input's columns, from struct_keys of a row, which needs no row; files_read: the text files
-- read_text found; paths; headers: each CSV file's header line, by the file's name).

create or replace temp view ndcg_no_input as
select null as query_id
where false;

create or replace temp view run_found_columns as
select
    coalesce(
        (
            select text_headers.header_fields from text_headers
            where text_headers.input_role = 'run'
            order by text_headers.source_file asc limit 1
        ),
        struct_keys(run_row)  -- noqa: RF02
    ) as found,
    coalesce(
        (
            select list(distinct text_lines.source_file) from text_lines
            where text_lines.input_role = 'run'
        ),
        []
    ) as files_read,
    getvariable('run_paths') as paths,
    (
        select list(struct_pack(text_headers.source_file, text_headers.header_fields) order by text_headers.source_file)
        from text_headers
        where text_headers.input_role = 'run'
    ) as headers
from (select 1 as one) as one_row
left join query_table(getvariable('run_source')) as run_row on false;

create or replace temp view qrels_found_columns as
select
    coalesce(
        (
            select text_headers.header_fields from text_headers
            where text_headers.input_role = 'qrels'
            order by text_headers.source_file asc limit 1
        ),
        struct_keys(qrels_row)  -- noqa: RF02
    ) as found,
    coalesce(
        (
            select list(distinct text_lines.source_file) from text_lines
            where text_lines.input_role = 'qrels'
        ),
        []
    ) as files_read,
    getvariable('qrels_paths') as paths,
    (
        select list(struct_pack(text_headers.source_file, text_headers.header_fields) order by text_headers.source_file)
        from text_headers
        where text_headers.input_role = 'qrels'
    ) as headers
from (select 1 as one) as one_row
left join query_table(getvariable('qrels_source')) as qrels_row on false;
