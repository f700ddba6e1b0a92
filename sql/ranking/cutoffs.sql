-- cutoffs.sql: the cutoffs k to evaluate, plus the whole ranking (k null).
--
-- The first step of the per-query table (pipeline/sql_files.py lists the steps in order;
-- sql/ndcg.sql reads them so). Reads no table.
--
-- Variables:
--   SET VARIABLE ks = [5, 10, 20];   -- required; the whole ranking (k null) is always added
--
-- Creates: view cutoffs (k bigint), one row per cutoff and one with k null.

create or replace temp view cutoffs as
with

-- each unnest alone in its own select, then cast: Spark allows no generator inside an expression
listed as (
    select unnest(getvariable('ks')) as k
),

final as (
    select cast(listed.k as bigint) as k from listed
    union all
    select cast(null as bigint) as k
)

select * from final;
