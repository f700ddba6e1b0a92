-- a singular dbt test: the rows returned fail it
select query_id, k, ndcg
from {{ ref('ndcg_per_query') }}
where ndcg < 0 or ndcg > 1
