-- NDCG@5 and @10 (and the whole ranking, k null) of every evaluated query, with P and AP beside
select *
from ndcg_per_query('{{ var("run") }}', '{{ var("qrels") }}', ks := [5, 10], measures := ['ndcg', 'P', 'map'])
