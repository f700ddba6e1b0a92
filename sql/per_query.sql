-- per_query.sql: CG, DCG, IDCG and NDCG at every cutoff, one row per query and cutoff.
--
-- Inputs: view run (query_id, doc_id, score) and view qrels (query_id, doc_id, relevance),
-- e.g. from sql/inputs.sql. The same steps, by the same names, are in
-- pipeline/engines/polars.py.
--
-- Conventions (trec_eval's; see pipeline/spec.py):
--   1. results ordered by score desc, ties by doc_id desc in string order; input ranks ignored
--   2. negative labels count as unjudged; unjudged documents gain 0
--   3. the ideal ranking is every judged document with positive gain, retrieved or not, cut at k
--   4. a query whose IDCG is 0 scores 0
--   5. queries only in the run are not evaluated; queries only in the qrels are skipped, or
--      score 0 when all_queries is true (trec_eval -c); max_results keeps the best N (-M)
--   6. duplicates are refused before this runs (pipeline/validate.py)
--
-- Variables (only ks is required):
--   SET VARIABLE ks = [5, 10, 20];           -- cutoffs; the whole ranking (k null) is always added
--   SET VARIABLE gain = 'linear';            -- or 'exponential' (2^label - 1)
--   SET VARIABLE gain_map = MAP {1: 3, 2: 9, 4: 4.5};   -- level -> gain; unmapped levels use `gain`
--   SET VARIABLE discount = 'log2';          -- 1/log2(rank+1); or 'jk': 1/max(1, log_b(rank))
--   SET VARIABLE log_base = 2;               -- b of the 'jk' discount
--   SET VARIABLE all_queries = false;        -- true: qrels queries missing from the run score 0
--   SET VARIABLE max_results = 1000;         -- unset: keep every result
--
-- Creates: view per_query (query_id, k, cg, dcg, idcg, ndcg); k is null for the whole ranking.

create or replace temp view per_query as
with

-- each unnest alone in its own select, then cast: Spark allows no generator inside an expression
cutoffs as (
    select cast(listed.k as bigint) as k from (select unnest(getvariable('ks')) as k) as listed
    union all
    select cast(null as bigint) as k
),

-- one unnest of (key, value) entries rather than two zipped unnests: portable to Spark
gain_map as (
    select
        cast(entries.entry.key as double) as level,
        cast(entries.entry.value as double) as mapped_gain
    from (select unnest(map_entries(getvariable('gain_map'))) as entry) as entries
),

judgments as (
    select
        qrels.query_id,
        qrels.doc_id,
        case
            when qrels.relevance is null or qrels.relevance < 0 then 0.0
            when gain_map.mapped_gain is not null then gain_map.mapped_gain
            when coalesce(getvariable('gain'), 'linear') = 'exponential'
                then pow(2.0, cast(qrels.relevance as double)) - 1.0
            else cast(qrels.relevance as double)
        end as gain
    from qrels
    left join gain_map on cast(qrels.relevance as double) = gain_map.level
),

judged_queries as (
    select distinct query_id from judgments
),

ranked as (
    select
        run.query_id,
        run.doc_id,
        row_number() over (
            partition by run.query_id
            order by run.score desc, cast(run.doc_id as varchar) desc
        ) as rank
    from run
    where run.query_id in (select judged_queries.query_id from judged_queries)
),

retrieved as (
    select
        ranked.query_id,
        ranked.rank,
        coalesce(judgments.gain, 0.0) as gain
    from ranked
    left join judgments
        on ranked.query_id = judgments.query_id and ranked.doc_id = judgments.doc_id
    where getvariable('max_results') is null or ranked.rank <= getvariable('max_results')
),

ideal as (
    select
        judgments.query_id,
        row_number() over (partition by judgments.query_id order by judgments.gain desc) as rank,
        judgments.gain
    from judgments
    where judgments.gain > 0
),

rankings as (
    select 'retrieved' as ranking, query_id, rank, gain from retrieved
    union all
    select 'ideal' as ranking, query_id, rank, gain from ideal
),

discounted as (
    select
        rankings.*,
        rankings.gain * case
            when coalesce(getvariable('discount'), 'log2') = 'jk'
                then 1.0 / greatest(1.0, ln(rankings.rank) / ln(coalesce(getvariable('log_base'), 2.0)))
            else 1.0 / (ln(rankings.rank + 1.0) / ln(2.0))
        end as discounted_gain
    from rankings
),

-- Running sums in rank order, read off at each cutoff: the same bits on every run, which a
-- parallel sum() in arbitrary row order does not give.
cumulative as (
    select
        discounted.ranking,
        discounted.query_id,
        discounted.rank,
        sum(discounted.gain) over running as cg,
        sum(discounted.discounted_gain) over running as dcg
    from discounted
    window running as (
        partition by discounted.ranking, discounted.query_id
        order by discounted.rank
        rows between unbounded preceding and current row
    )
),

depths as (
    select
        discounted.ranking,
        discounted.query_id,
        max(discounted.rank) as depth
    from discounted
    group by discounted.ranking, discounted.query_id
),

sums_at_cutoffs as (
    select
        depths.ranking,
        depths.query_id,
        cutoffs.k,
        cumulative.cg,
        cumulative.dcg
    from depths
    cross join cutoffs
    inner join cumulative
        on cumulative.ranking = depths.ranking
        and cumulative.query_id = depths.query_id
        and cumulative.rank = case
            when cutoffs.k is null or cutoffs.k > depths.depth then depths.depth
            else cutoffs.k
        end
),

evaluated_queries as (
    select distinct ranked.query_id from ranked
    union
    select judged_queries.query_id from judged_queries
    where coalesce(getvariable('all_queries'), false)
),

final as (
    select
        evaluated_queries.query_id,
        cutoffs.k,
        coalesce(retrieved_sums.cg, 0.0) as cg,
        coalesce(retrieved_sums.dcg, 0.0) as dcg,
        coalesce(ideal_sums.dcg, 0.0) as idcg,
        case
            when coalesce(ideal_sums.dcg, 0.0) > 0 then coalesce(retrieved_sums.dcg, 0.0) / ideal_sums.dcg
            else 0.0
        end as ndcg
    from evaluated_queries
    cross join cutoffs
    left join sums_at_cutoffs as retrieved_sums
        on retrieved_sums.ranking = 'retrieved'
        and retrieved_sums.query_id = evaluated_queries.query_id
        and retrieved_sums.k is not distinct from cutoffs.k
    left join sums_at_cutoffs as ideal_sums
        on ideal_sums.ranking = 'ideal'
        and ideal_sums.query_id = evaluated_queries.query_id
        and ideal_sums.k is not distinct from cutoffs.k
)

select * from final
order by query_id, k nulls first;
