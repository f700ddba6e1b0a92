-- floor_scan.sql: the cheapest pass over a run: read every score once.
-- Variables: SET VARIABLE run_path = 'bench/data/1M/run/*.parquet';
-- Output: rows, sum of scores.

select count(*) as rows, sum(score) as total_score
from read_parquet(getvariable('run_path'));
