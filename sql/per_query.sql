-- per_query.sql: CG, DCG, IDCG and NDCG at every cutoff, one row per query and cutoff.
--
-- Inputs: view run (query_id, doc_id, score, arrival, input_rank) and view qrels (query_id,
-- doc_id, relevance), e.g. from sql/inputs.sql. arrival is any integer that increases in the
-- order rows arrive; input_rank is the input's own rank or null. Both are read only by
-- ties = 'input-order' and the duplicate policies. The same steps, by the same names, are in
-- pipeline/engines/polars.py.
--
-- Conventions (defaults are trec_eval's; the definitions are in pipeline/spec.py):
--   1. results ordered by score desc; ties by doc_id desc in string order ('docid-desc'),
--      by input_rank then arrival ('input-order'), or sharing their mean gain ('average')
--   2. negative labels count as unjudged; unjudged documents gain 0; relevant means
--      label >= relevance_threshold (label > 0 when unset), used by the 'binary' gain
--   3. the ideal ranking is the positive gains of every judged document ('judged'), of the
--      ranked documents ('retrieved'), or of every judged document cut at the number of
--      results ('judged-cut-at-hits'), cut at k
--   4. a query whose IDCG is 0 scores 0 ('zero'), 1 ('one'), NaN ('nan') or null ('skip')
--   5. queries only in the run are not evaluated; queries only in the qrels are skipped, or
--      score 0 when all_queries is true (trec_eval -c); max_results keeps the best N (-M)
--   6. unjudged = 'drop' removes unjudged documents (absent from the qrels or labelled below 0)
--      after max_results (trec_eval -J)
--   7. duplicates in the run: refused before this runs ('error', pipeline/validate.py), or
--      the first row to arrive ('first') or the highest score ('max-score') is kept
--
-- Variables (only ks is required):
--   SET VARIABLE ks = [5, 10, 20];           -- cutoffs; the whole ranking (k null) is always added
--   SET VARIABLE gain = 'linear';            -- or 'exponential' (2^label - 1) or 'binary' (1 if relevant)
--   SET VARIABLE gain_map = MAP {1: 3, 2: 9, 4: 4.5};   -- level -> gain; unmapped levels use `gain`
--   SET VARIABLE discount = 'log2';          -- 1/log2(rank+1); or 'jk': 1/max(1, log_b(rank))
--   SET VARIABLE log_base = 2;               -- b of the 'jk' discount
--   SET VARIABLE all_queries = false;        -- true: qrels queries missing from the run score 0
--   SET VARIABLE max_results = 1000;         -- unset: keep every result
--   SET VARIABLE ties = 'docid-desc';        -- or 'input-order' or 'average'
--   SET VARIABLE ideal = 'judged';           -- or 'retrieved' or 'judged-cut-at-hits'
--   SET VARIABLE empty_ideal = 'zero';       -- or 'one', 'nan', 'skip'
--   SET VARIABLE unjudged = 'zero';          -- or 'drop'
--   SET VARIABLE duplicates = 'error';       -- or 'first' or 'max-score'
--   SET VARIABLE relevance_threshold = 1;    -- unset: label > 0 is relevant
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
            when coalesce(getvariable('gain'), 'linear') = 'binary'
                then case
                    when getvariable('relevance_threshold') is null and qrels.relevance > 0 then 1.0
                    when qrels.relevance >= getvariable('relevance_threshold') then 1.0
                    else 0.0
                end
            when coalesce(getvariable('gain'), 'linear') = 'exponential'
                then pow(2.0, cast(qrels.relevance as double)) - 1.0
            else cast(qrels.relevance as double)
        end as gain,
        -- a negative label counts as unjudged (trec_eval -J drops it too)
        coalesce(qrels.relevance >= 0, false) as judged
    from qrels
    left join gain_map on cast(qrels.relevance as double) = gain_map.level
),

judged_queries as (
    select distinct query_id from judgments
),

run_rows as (
    select
        run.query_id,
        run.doc_id,
        run.score,
        cast(run.arrival as bigint) as arrival,
        cast(run.input_rank as double) as input_rank
    from run
    where run.query_id in (select judged_queries.query_id from judged_queries)
),

numbered_copies as (
    select
        run_rows.*,
        row_number() over (
            partition by run_rows.query_id, run_rows.doc_id
            order by
                case when getvariable('duplicates') = 'max-score' then run_rows.score end desc nulls last,
                run_rows.arrival asc
        ) as copy_number
    from run_rows
    -- with duplicates refused upstream there is nothing to number
    where coalesce(getvariable('duplicates'), 'error') <> 'error'
),

deduplicated as (
    select query_id, doc_id, score, arrival, input_rank
    from run_rows
    where coalesce(getvariable('duplicates'), 'error') = 'error'
    union all
    select query_id, doc_id, score, arrival, input_rank
    from numbered_copies
    where copy_number = 1
),

ranked as (
    select
        deduplicated.query_id,
        deduplicated.doc_id,
        deduplicated.score,
        row_number() over (
            partition by deduplicated.query_id
            order by
                case when getvariable('ties') = 'input-order' then deduplicated.input_rank end asc nulls last,
                deduplicated.score desc,
                case when getvariable('ties') = 'input-order' then deduplicated.arrival end asc nulls last,
                cast(deduplicated.doc_id as varchar) desc
        ) as position
    from deduplicated
),

retrieved_rows as (
    select
        ranked.query_id,
        ranked.score,
        ranked.position,
        coalesce(judgments.gain, 0.0) as gain
    from ranked
    left join judgments
        on ranked.query_id = judgments.query_id and ranked.doc_id = judgments.doc_id
    where
        (getvariable('max_results') is null or ranked.position <= getvariable('max_results'))
        and (coalesce(getvariable('unjudged'), 'zero') <> 'drop' or coalesce(judgments.judged, false))
),

retrieved as (
    select
        retrieved_rows.query_id,
        row_number() over (partition by retrieved_rows.query_id order by retrieved_rows.position) as rank,
        retrieved_rows.gain,
        -- what the rank earns: its own gain, or its tie group's mean gain
        case
            when getvariable('ties') = 'average'
                then avg(retrieved_rows.gain) over (partition by retrieved_rows.query_id, retrieved_rows.score)
            else retrieved_rows.gain
        end as credited_gain
    from retrieved_rows
),

hits as (
    select retrieved.query_id, count(*) as hits
    from retrieved
    group by retrieved.query_id
),

ideal_gains as (
    select judgments.query_id, judgments.gain
    from judgments
    where judgments.gain > 0 and coalesce(getvariable('ideal'), 'judged') <> 'retrieved'
    union all
    select retrieved.query_id, retrieved.gain
    from retrieved
    where retrieved.gain > 0 and getvariable('ideal') = 'retrieved'
),

ideal_ranked as (
    select
        ideal_gains.query_id,
        row_number() over (partition by ideal_gains.query_id order by ideal_gains.gain desc) as rank,
        ideal_gains.gain
    from ideal_gains
),

ideal as (
    select ideal_ranked.query_id, ideal_ranked.rank, ideal_ranked.gain as credited_gain
    from ideal_ranked
    left join hits on ideal_ranked.query_id = hits.query_id
    where
        getvariable('ideal') is distinct from 'judged-cut-at-hits'
        or ideal_ranked.rank <= coalesce(hits.hits, 0)
),

rankings as (
    select 'retrieved' as ranking, query_id, rank, credited_gain from retrieved
    union all
    select 'ideal' as ranking, query_id, rank, credited_gain from ideal
),

discounted as (
    select
        rankings.*,
        rankings.credited_gain * case
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
        sum(discounted.credited_gain) over running as cg,
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
            when getvariable('empty_ideal') = 'one' then 1.0
            when getvariable('empty_ideal') = 'nan' then cast('NaN' as double)
            when getvariable('empty_ideal') = 'skip' then cast(null as double)
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
