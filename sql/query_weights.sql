-- query_weights.sql: the weights of query_weights_path beside the evaluated queries, as read.
--
-- Input: table or view per_query (sql/measures/per_query.sql). Variables:
--   SET VARIABLE query_weights_path = 'docs/conventions/weights.csv';  -- Parquet, CSV, a table or a view
--   SET VARIABLE missing_query_weight = 1.0;   -- the weight of an evaluated query without a row
-- query_weights_path has the columns query_id and weight (a view renames others); unset: no weights.
--
-- Creates: views query_weights_given (query_id as text, weight, weight_type, file_row: the rows
-- counted from 1 as read; none without query_weights_path), query_weights_columns (the words for a
-- column it lacks) and query_weights_evaluated (each evaluated query: counted, whether its ndcg is
-- in the means; missing, whether it has no row; weight, its own or missing_query_weight).

create or replace temp view no_query_weights as
select cast(null as varchar) as query_id, cast(null as double) as weight
where false;

-- the table as given, a view of its own so that duckdb_columns lists its columns
create or replace temp view query_weights_table as
from query_table(coalesce(getvariable('query_weights_path'), 'no_query_weights'));

-- the command line's words for a column the table lacks (null: it has both)
create or replace temp view query_weights_columns as
with found as (
    select
        bool_or(column_name = 'query_id') as has_query_id,
        bool_or(column_name = 'weight') as has_weight,
        string_agg('''' || column_name || '''', ', ' order by column_index) as column_names
    from duckdb_columns()
    where database_name = 'temp' and table_name = 'query_weights_table'
)

select
    case
        when not found.has_query_id
            then 'no column ''query_id'' to join query weights on; columns found: ' || found.column_names
        when not found.has_weight
            then 'no weight column ''weight''; columns found: ' || found.column_names || '; name it weight in a view'
    end as missing_column
from found;

create or replace temp view query_weights_given as
select
    cast(query_id as varchar) as query_id,
    try_cast(weight as double) as weight,
    typeof(weight) as weight_type,
    row_number() over () as file_row
-- a table without one of the columns gets it, null, so that this view binds (the rules name it)
from (
    from query_weights_table
    union all by name
    select null as query_id, null as weight
    where false
) as given;

create or replace temp view query_weights_evaluated as
select distinct
    cast(per_query.query_id as varchar) as query_id,
    per_query.ndcg is not null as counted,
    query_weights_given.query_id is null as missing,
    coalesce(query_weights_given.weight, getvariable('missing_query_weight')) as weight
from per_query
left join query_weights_given on cast(per_query.query_id as varchar) = query_weights_given.query_id;

-- the rows breaking each rule on a row, and the queries given twice (read by sql/query_weight_rules.sql)
create or replace temp view query_weights_broken as
select
    rules.position,
    count(*) as found,
    any_value(rules.words) as words,
    min(query_weights_given.file_row) as first_row,
    arg_min(
        coalesce('''' || query_weights_given.query_id || '''', 'None'), query_weights_given.file_row
    ) as first_query,
    arg_min(coalesce(cast(query_weights_given.weight as varchar), 'None'), query_weights_given.file_row) as first_weight
from query_weights_given
inner join (
    values
    (1, 'a null query id (column ''query_id'')'), (2, 'a null weight'), (3, 'a NaN weight'),
    (4, 'an infinite weight'), (5, 'a negative weight'),
    (6, 'a subnormal weight (above 0, below 2.2250738585072014e-308: few digits kept; scale every weight up)')
) as rules (position, words)
    on (rules.position = 1 and query_weights_given.query_id is null)
    or (rules.position = 2 and query_weights_given.weight is null)
    or (rules.position = 3 and isnan(query_weights_given.weight))
    or (rules.position = 4 and isinf(query_weights_given.weight))
    or (rules.position = 5 and query_weights_given.weight < 0)
    or (rules.position = 6 and query_weights_given.weight > 0 and query_weights_given.weight < 2.2250738585072014e-308)
group by rules.position;

create or replace temp view query_weights_repeated as
select
    query_weights_given.query_id,
    count(*) as copies,
    min(query_weights_given.file_row) as first_row,
    array_to_string(list(query_weights_given.file_row order by query_weights_given.file_row)[1:3], ', ') as shown_rows,
    array_to_string(list(query_weights_given.weight order by query_weights_given.file_row)[1:3], ', ') as shown_weights
from query_weights_given
where query_weights_given.query_id is not null
group by query_weights_given.query_id
having count(*) > 1;
