-- the means over the evaluated queries, one row per cutoff
select *
from ndcg_summary('{{ var("run") }}', '{{ var("qrels") }}', ks := [5, 10], measures := ['ndcg', 'P', 'map'])
