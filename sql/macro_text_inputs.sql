-- macro_text_inputs.sql: TREC and CSV/TSV text given to the table macros, read as the command
-- line reads it (pipeline/io/trec.py, pipeline/io/csv_text.py). Not run on its own: each view becomes
-- a CTE of the macros (sql/generated/macros.sql), before those of sql/macro_inputs.sql.
--
-- Reads: the files of getvariable('run_text_paths') and getvariable('qrels_text_paths') (none
-- unless the input is text), read whole by read_text; getvariable('run_read_as') and
-- getvariable('qrels_read_as') ('trec', 'csv' or 'tsv'), which pipeline/macros.py writes in
-- from the arguments.
-- TREC: fields split on runs of ASCII whitespace (space, tab, CR, VT, FF) as trec_eval splits
-- them; a run line is qid Q0 docno rank score [tag], a qrels line exactly qid iter docno rel;
-- blank lines and trec_eval's comment lines skipped ('#' after blanks in a run, in the first
-- column of qrels); a line that does not parse keeps its text and number for the refusal.
-- CSV/TSV: a header naming the columns, ids read as text, quoted fields ("a,b", "a ""b""");
-- a line with a quote left open (a field holding a line break) is refused (one line, one row).
--
-- Creates: views run_text_rows and qrels_text_rows (query_id, doc_id, score or relevance,
-- ndcg_file, ndcg_line_number, ndcg_line, ndcg_unparsed, ndcg_value_text, ndcg_fields,
-- ndcg_expected_fields, ndcg_first), and text_headers (each CSV file's header).

create or replace temp view text_lines as
select
    texts.input_role,
    texts.read_as,
    texts.source_file,
    texts.line_number,
    regexp_replace(
        if(texts.line_number = 1, ltrim(texts.raw_line, chr(65279)), texts.raw_line), '\r$', ''
    ) as line_text
from (
    select
        files.input_role,
        files.read_as,
        files.source_file,
        unnest(files.file_lines) as raw_line,
        generate_subscripts(files.file_lines, 1) as line_number
    from (
        select
            'run' as input_role,
            getvariable('run_read_as') as read_as,
            run_file.filename as source_file,
            string_split(run_file.content, chr(10)) as file_lines
        from read_text(getvariable('run_text_paths')) as run_file
        union all
        select
            'qrels' as input_role,
            getvariable('qrels_read_as') as read_as,
            qrels_file.filename as source_file,
            string_split(qrels_file.content, chr(10)) as file_lines
        from read_text(getvariable('qrels_text_paths')) as qrels_file
    ) as files
) as texts;

create or replace temp view text_fields as
select
    text_lines.*,
    if(
        text_lines.read_as = 'trec',
        list_filter(regexp_split_to_array(text_lines.line_text, '[ \t\n\x0B\x0C\r]+'), f -> f <> ''),
        list_transform(
            -- each field after its separator, one put before the first: a pattern's empty match at the
            -- line's start made the search skip the separator after it (',d1,3' gave 2 fields); the
            -- refusal of text after a closing quote cuts with this pattern too (pipeline/sql_text_refusals.py)
            regexp_extract_all(
                if(text_lines.read_as = 'tsv', chr(9), ',') || text_lines.line_text,
                if(text_lines.read_as = 'tsv', '\t("(?:[^"]|"")*"|[^\t]*)', ',("(?:[^"]|"")*"|[^,]*)'),
                1
            ),
            f -> if(
                len(f) >= 2 and starts_with(f, '"') and ends_with(f, '"'), replace(f[2:-2], '""', '"'), f
            )
        )
    ) as line_fields
from text_lines
where
    text_lines.line_text <> ''
    -- a TREC line of blanks alone holds no field, and a run's line of blanks then '#' is a comment:
    -- told by what the line starts with once its blanks are trimmed, not by counting its fields
    -- after (a filter DuckDB pushed down to here, splitting each line once more) nor by a pattern
    and not (
        text_lines.read_as = 'trec'
        and left(ltrim(text_lines.line_text, ' ' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13)), 1)
        in ('', if(text_lines.input_role = 'run', '#', ''))
    )
    and not (
        text_lines.read_as = 'trec' and text_lines.input_role = 'qrels' and starts_with(text_lines.line_text, '#')
    );

create or replace temp view text_headers as
select text_fields.input_role, text_fields.source_file, text_fields.line_fields as header_fields
from text_fields
where text_fields.read_as <> 'trec' and text_fields.line_number = 1;
