-- counters.sql: every evaluated query at each cutoff, with the registry's counters as columns.
--
-- Reads: views evaluated_queries (sql/counters/evaluated_queries.sql), cutoffs
-- (sql/ranking/cutoffs.sql), sums_at_cutoffs (sql/counters/sums_at_cutoffs.sql) and signals
-- (sql/counters/signals.sql).
--
-- Variables:
--   SET VARIABLE signals = [{'name': 'relevant', 'low': 0.0, 'low_closed': false, 'high': NULL, 'high_closed': false}];
--                                            -- unset: no signal is counted, every counter of a signal null
--
-- Creates: view counters (query_id, k, then each counter of pipeline/registry/counters.py's
-- COUNTERS, named <signal>_<accumulation>): found, first_rank and precision_sum of a signal at
-- k (null where no rank at or above k holds it, or the signal is not asked), in_qrels of a
-- signal (how many of the query's judged documents it holds for: R for relevant, the same at
-- every k), and retrieved_in_ranking (sql/counters/evaluated_queries.sql). The one step that
-- turns the signals' rows into the columns the measures read: a counter the registry adds is a
-- line here (tests/test_registry.py checks the columns are the registry's).

create or replace temp view counters as
with

at_cutoffs as (
    select
        s.query_id,
        s.k,
        max(s.found) filter (where s.signal = 'relevant') as relevant_found,
        max(s.precision_sum) filter (where s.signal = 'relevant') as relevant_precision_sum,
        max(s.first_rank) filter (where s.signal = 'relevant') as relevant_first_rank,
        max(s.found) filter (where s.signal = 'judged') as judged_found,
        max(s.found) filter (where s.signal = 'nonrelevant') as nonrelevant_found,
        max(s.found) filter (where s.signal = 'pooled') as pooled_found
    from sums_at_cutoffs as s
    -- said of the variable too, so that sqlglot prunes the join for Spark when none is asked
    where s.signal is not null and getvariable('signals') is not null
    group by s.query_id, s.k
),

in_qrels as (
    select
        s.query_id,
        count(*) filter (where s.signal = 'relevant') as relevant_in_qrels,
        count(*) filter (where s.signal = 'nonrelevant') as nonrelevant_in_qrels
    from signals as s
    where s.source = 'judgments'
    group by s.query_id
),

final as (
    select
        evaluated_queries.query_id,
        cutoffs.k,
        at_cutoffs.relevant_found,
        at_cutoffs.relevant_precision_sum,
        at_cutoffs.relevant_first_rank,
        coalesce(in_qrels.relevant_in_qrels, 0) as relevant_in_qrels,
        at_cutoffs.judged_found,
        at_cutoffs.nonrelevant_found,
        coalesce(in_qrels.nonrelevant_in_qrels, 0) as nonrelevant_in_qrels,
        evaluated_queries.retrieved_in_ranking,
        at_cutoffs.pooled_found
    from evaluated_queries
    cross join cutoffs
    left join at_cutoffs
        on evaluated_queries.query_id = at_cutoffs.query_id and cutoffs.k is not distinct from at_cutoffs.k
    left join in_qrels on evaluated_queries.query_id = in_qrels.query_id
)

select * from final;
