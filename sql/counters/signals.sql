-- signals.sql: where each signal the asked measures count holds, one row per signal that holds:
-- at the judged ranks of the ranking by score, and at the judged documents of each query.
--
-- Reads: views rankings (sql/ranking/rankings.sql) and judgments (sql/ranking/judgments.sql).
--
-- Variables:
--   SET VARIABLE signals = [{'name': 'relevant', 'low': 0.0, 'low_closed': false, 'high': NULL, 'high_closed': false,
--                            'precision_sum': true}];
--
-- Creates: view signals (source, query_id, rank, signal, precision_summed): source 'ranking' (a
-- rank of the ranking by score) or 'judgments' (a judged document; rank null); signal, the name of
-- each entry of `signals` whose bounds hold the document's label: low and high (null: unbounded),
-- each included when its _closed says so; precision_summed, whether its precision_sum is read.
-- A signal is data: its bounds are the registry's (pipeline/registry/counters.py), bound for the
-- measures asked by the engines, and in the duckdb CLI by sql/generated/derived_variables.sql;
-- no step names a signal it does not read itself. A document absent from the judgments (label
-- null) holds none. signals unset: no row.

create or replace temp view signals as
with

-- typed, so that an unset variable still has the fields; each unnest alone in its own select
-- (Spark allows no generator inside an expression)
asked as (
    select
        unnest(
            cast(
                getvariable('signals')
                as struct(
                    name varchar, low double, low_closed boolean, high double, high_closed boolean,
                    precision_sum boolean
                )[]
            )
        ) as signal
    where getvariable('signals') is not null
),

labelled as (
    select 'ranking' as source, rankings.query_id, rankings.rank, rankings.label
    from rankings
    where rankings.ranking = 'retrieved' and rankings.label is not null and getvariable('signals') is not null
    union all
    select 'judgments' as source, judgments.query_id, cast(null as bigint) as rank, judgments.label
    from judgments
    where judgments.label is not null and getvariable('signals') is not null
),

final as (
    select
        labelled.source,
        labelled.query_id,
        labelled.rank,
        asked.signal.name as signal,
        asked.signal.precision_sum as precision_summed
    from asked
    inner join labelled
        on (
            asked.signal.low is null
            or asked.signal.low < labelled.label
            or (asked.signal.low_closed and asked.signal.low = labelled.label)
        )
        and (
            asked.signal.high is null
            or asked.signal.high > labelled.label
            or (asked.signal.high_closed and asked.signal.high = labelled.label)
        )
)

select * from final;
