-- floor_sort.sql: the ordering every NDCG needs, and nothing else: the run sorted by
-- (query_id, score desc, doc_id desc) and materialised.
-- Variables: SET VARIABLE run_path = 'bench/data/1M/run/*.parquet';
-- Output: the number of sorted rows.

create or replace temp table sorted_run as
select query_id, doc_id, score
from read_parquet(getvariable('run_path'))
order by query_id, score desc, doc_id desc;

select count(*) as rows from sorted_run;
