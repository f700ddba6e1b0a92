-- query_weight_rules.sql: the query weights checked by the rules of `ndcg evaluate --query-weights`, in its words.
--
-- Input: views query_weights_given, query_weights_columns and query_weights_evaluated (sql/query_weights.sql).
-- Variables: query_weights_path and missing_query_weight (sql/query_weights.sql).
-- Creates: view query_weights (query_id as text, weight): each evaluated query's weight, or the command line's error
-- (pipeline/weights.py) in its words, the first rule broken in its order: a column missing, a weight that is not a
-- number, a row with a null query id, a null, NaN, infinite or negative weight, or a subnormal one (its first row
-- and how many), a query given twice, an evaluated query without a weight (missing_query_weight unset), every query
-- in the means weighing 0, or more together than Float64 holds.

create or replace temp view query_weights as
with

-- each rule's message (null while it holds)
messages as (
    select
        (select query_weights_columns.missing_column from query_weights_columns) as no_column,
        (
            select
                'weight column ''weight'' holds '
                -- Polars' names of the types, as the command line (and sql/generated/refusals.sql) names them
                || case any_value(given.weight_type)
                    when 'VARCHAR' then 'String' when 'BOOLEAN' then 'Boolean' when 'DATE' then 'Date'
                    when 'BLOB' then 'Binary' else any_value(given.weight_type)
                end
                || ' values; expected numbers (a weight is a finite number >= 0)'
            from query_weights_given as given
            where given.weight_type not similar to '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL.*|"NULL")'
        ) as wrong_type,
        (
            select
                broken.found || ' row(s) with ' || broken.words || ' in column ''weight'', first row '
                || broken.first_row || ' (query ' || broken.first_query || ', weight ' || broken.first_weight
                || '); a weight is a finite number >= 0, one per query: fix or remove those rows'
            from query_weights_broken as broken
            order by broken.position
            limit 1
        ) as bad_value,
        (
            select
                (select count(*) from query_weights_repeated) || ' query(ies) weighted more than once, first '''
                || twice.query_id || ''' in rows ' || twice.shown_rows
                || case when twice.copies > 3 then ' and ' || (twice.copies - 3) || ' more' else '' end
                || ' (weights ' || twice.shown_weights || '); give each query one row'
            from query_weights_repeated as twice
            order by twice.first_row
            limit 1
        ) as given_twice,
        (
            select
                count(*) filter (where weighed.missing) || ' of the ' || count(*)
                || ' evaluated queries have no weight'
                || if(bool_and(weighed.missing), ' (none of them has one: are they the same ids?)', '')
                || ', e.g. '
                || array_to_string(list('''' || weighed.query_id || '''' order by weighed.query_id) filter (
                    where weighed.missing
                )[1:5], ', ')
                || '; add a row for each, or SET VARIABLE missing_query_weight = W to weigh each such query W'
            from query_weights_evaluated as weighed
            having bool_or(weighed.missing) and getvariable('missing_query_weight') is null
        ) as unweighed,
        (
            select
                case
                    when sum(weighed.weight) = 0
                        then
                            'all ' || count(*) || ' evaluated queries weigh 0, so their weighted mean is 0/0; '
                            || 'give one of them a weight above 0'
                    when isinf(sum(weighed.weight))
                        then
                            'the ' || count(*) || ' evaluated queries weigh more together than Float64 holds '
                            || '(their sum overflows), so their weighted mean is inf/inf; scale every weight down (one '
                            || 'factor for every weight changes no mean)'
                end
            from query_weights_evaluated as weighed
            where weighed.counted
        ) as weightless
),

refusal as (
    select
        coalesce(
            messages.no_column, messages.wrong_type, messages.bad_value, messages.given_twice, messages.unweighed,
            messages.weightless
        ) as message
    from messages
)

select
    weighed.query_id,
    weighed.weight
from query_weights_evaluated as weighed, refusal
where
    getvariable('query_weights_path') is not null
    and case
        when refusal.message is null then true
        else error(getvariable('query_weights_path') || ': ' || refusal.message)
    end;
