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
--   SET VARIABLE tie_bounds = true;          -- also the lowest and highest NDCG over orders of ties
--
-- Creates: table per_query (query_id, k, cg, dcg, idcg, ndcg, ndcg_min, ndcg_max,
-- ties_straddle_k); k is null for the whole ranking. A table, not a view: computed once, when
-- this file runs, with the variables set at that moment, however often it is read after.
-- ndcg_min and ndcg_max are the NDCG of the worst and best order of tied results (ties
-- broken by gain ascending, descending); ties_straddle_k says whether the results at rank k
-- and k + 1 are tied. All three are null unless tie_bounds is true. The bounds are exact
-- unless max_results cuts through a tie group and the ideal depends on which tied results
-- are kept (ideal 'retrieved', or 'judged-cut-at-hits' with unjudged 'drop'); that
-- combination is refused by pipeline/spec.py.

create or replace temp table per_query as
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

-- every row of the run: each step is per query, so the queries without judgments are left
-- out of evaluated_queries below rather than filtered out of the run here (a join per row)
run_rows as (
    select
        run.query_id,
        run.doc_id,
        run.score,
        cast(run.arrival as bigint) as arrival,
        cast(run.input_rank as double) as input_rank
    from run
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

-- the ranking under the ties convention, ranked before the gains are joined: the sort then
-- carries fewer columns. Two selects rather than one ordering switched by CASE keys: a key
-- that folds to a constant null is still compared on every row (measured 20% of the sort)
ranked_by_score as (
    select
        deduplicated.query_id,
        deduplicated.doc_id,
        deduplicated.score,
        deduplicated.input_rank,
        row_number() over (
            partition by deduplicated.query_id
            order by deduplicated.score desc, cast(deduplicated.doc_id as varchar) desc
        ) as position
    from deduplicated
    where coalesce(getvariable('ties'), 'docid-desc') <> 'input-order'
    union all
    select
        deduplicated.query_id,
        deduplicated.doc_id,
        deduplicated.score,
        deduplicated.input_rank,
        row_number() over (
            partition by deduplicated.query_id
            order by
                deduplicated.input_rank asc nulls last,
                deduplicated.score desc,
                deduplicated.arrival asc,
                cast(deduplicated.doc_id as varchar) desc
        ) as position
    from deduplicated
    where getvariable('ties') = 'input-order'
),

-- with tie_bounds only: 'worst' and 'best' break the same ties by gain, ascending and
-- descending, the lowest and highest NDCG any order of the ties can give. They need the gains
-- before ranking; both selects are pruned entirely when tie_bounds is off
gained as (
    select
        deduplicated.*,
        coalesce(judgments.gain, 0.0) as gain,
        coalesce(judgments.judged, false) as judged
    from deduplicated
    left join judgments
        on deduplicated.query_id = judgments.query_id and deduplicated.doc_id = judgments.doc_id
    where coalesce(getvariable('tie_bounds'), false)
),

ranked as (
    select
        'retrieved' as ordering,
        ranked_by_score.query_id,
        ranked_by_score.score,
        ranked_by_score.input_rank,
        coalesce(judgments.gain, 0.0) as gain,
        coalesce(judgments.judged, false) as judged,
        ranked_by_score.position
    from ranked_by_score
    left join judgments
        on ranked_by_score.query_id = judgments.query_id and ranked_by_score.doc_id = judgments.doc_id
    -- When no later step reads a rank that earns nothing (no renumbering without the
    -- unjudged, no tie groups' mean gain, no count of the results, no tie bounds), only the
    -- ranks that earn are kept: the variables fold to constants, and the filter makes this an
    -- inner join with the judgments that gain something (a tenth of the rows at 10M)
    where
        judgments.gain <> 0
        or coalesce(getvariable('unjudged'), 'zero') = 'drop'
        or getvariable('ties') = 'average'
        or getvariable('ideal') = 'judged-cut-at-hits'
        or coalesce(getvariable('tie_bounds'), false)
    union all
    select
        'worst' as ordering,
        gained.query_id,
        gained.score,
        gained.input_rank,
        gained.gain,
        gained.judged,
        row_number() over (
            partition by gained.query_id
            order by
                case when getvariable('ties') = 'input-order' then gained.input_rank end asc nulls last,
                gained.score desc,
                gained.gain asc,
                cast(gained.doc_id as varchar) desc
        ) as position
    from gained
    union all
    select
        'best' as ordering,
        gained.query_id,
        gained.score,
        gained.input_rank,
        gained.gain,
        gained.judged,
        row_number() over (
            partition by gained.query_id
            order by
                case when getvariable('ties') = 'input-order' then gained.input_rank end asc nulls last,
                gained.score desc,
                gained.gain desc,
                cast(gained.doc_id as varchar) desc
        ) as position
    from gained
),

retrieved_rows as (
    select ranked.*
    from ranked
    where
        (getvariable('max_results') is null or ranked.position <= getvariable('max_results'))
        and (coalesce(getvariable('unjudged'), 'zero') <> 'drop' or ranked.judged)
),

retrieved as (
    select
        retrieved_rows.ordering,
        retrieved_rows.query_id,
        retrieved_rows.score,
        retrieved_rows.input_rank,
        -- renumbered only when unjudged rows were dropped; otherwise the position is the rank
        case
            when getvariable('unjudged') = 'drop'
                then row_number() over (
                    partition by retrieved_rows.ordering, retrieved_rows.query_id
                    order by retrieved_rows.position
                )
            else retrieved_rows.position
        end as rank,
        retrieved_rows.gain,
        -- what the rank earns: its own gain, or its tie group's mean gain (the tie bounds'
        -- orderings are orders of the ties, so their ranks earn their own gains)
        case
            when getvariable('ties') = 'average' and retrieved_rows.ordering = 'retrieved'
                then avg(retrieved_rows.gain) over (
                    partition by retrieved_rows.ordering, retrieved_rows.query_id, retrieved_rows.score
                )
            else retrieved_rows.gain
        end as credited_gain
    from retrieved_rows
),

as_ranked as (
    select * from retrieved where retrieved.ordering = 'retrieved'
),

hits as (
    select as_ranked.query_id, count(*) as hits
    from as_ranked
    where getvariable('ideal') = 'judged-cut-at-hits'
    group by as_ranked.query_id
),

ideal_gains as (
    select judgments.query_id, judgments.gain
    from judgments
    where judgments.gain > 0 and coalesce(getvariable('ideal'), 'judged') <> 'retrieved'
    union all
    select as_ranked.query_id, as_ranked.gain
    from as_ranked
    where as_ranked.gain > 0 and getvariable('ideal') = 'retrieved'
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

-- only ranks that earn something: a rank with credited gain 0 adds exactly 0 to every sum
rankings as (
    select retrieved.ordering as ranking, retrieved.query_id, retrieved.rank, retrieved.credited_gain
    from retrieved
    where retrieved.credited_gain <> 0
    union all
    select 'ideal' as ranking, ideal.query_id, ideal.rank, ideal.credited_gain
    from ideal
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

-- Running sums in rank order: the same bits on every run, which a parallel sum() in
-- arbitrary row order does not give. next_rank says up to which cutoff each sum holds.
cumulative as (
    select
        discounted.ranking,
        discounted.query_id,
        discounted.rank,
        lead(discounted.rank) over in_rank_order as next_rank,
        sum(discounted.credited_gain) over running as cg,
        sum(discounted.discounted_gain) over running as dcg
    from discounted
    window
        in_rank_order as (partition by discounted.ranking, discounted.query_id order by discounted.rank),
        running as (
            partition by discounted.ranking, discounted.query_id
            order by discounted.rank
            rows between unbounded preceding and current row
        )
),

-- the sums at cutoff k are those of the last earning rank at or above k
sums_at_cutoffs as (
    select
        cumulative.ranking,
        cumulative.query_id,
        cutoffs.k,
        cumulative.cg,
        cumulative.dcg
    from cumulative
    cross join cutoffs
    where
        (cutoffs.k is null and cumulative.next_rank is null)
        or (cutoffs.k is not null and cumulative.rank <= cutoffs.k
            and (cumulative.next_rank is null or cumulative.next_rank > cutoffs.k))
),

-- the judged queries the run has, or with all_queries every judged query
evaluated_queries as (
    select judged_queries.query_id from judged_queries
    where
        coalesce(getvariable('all_queries'), false)
        or judged_queries.query_id in (select distinct run.query_id from run)
),

orderings as (
    select 'retrieved' as ordering
    union all
    select 'worst' as ordering where coalesce(getvariable('tie_bounds'), false)
    union all
    select 'best' as ordering where coalesce(getvariable('tie_bounds'), false)
),

scored as (
    select
        orderings.ordering,
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
    cross join orderings
    left join sums_at_cutoffs as retrieved_sums
        on retrieved_sums.ranking = orderings.ordering
        and retrieved_sums.query_id = evaluated_queries.query_id
        and retrieved_sums.k is not distinct from cutoffs.k
    left join sums_at_cutoffs as ideal_sums
        on ideal_sums.ranking = 'ideal'
        and ideal_sums.query_id = evaluated_queries.query_id
        and ideal_sums.k is not distinct from cutoffs.k
),

-- whether the results at rank k and k + 1 are tied: a tie group that straddles the cutoff
straddles as (
    select
        as_ranked.query_id,
        as_ranked.rank,
        coalesce(
            lead(as_ranked.score) over in_rank_order = as_ranked.score
            and (
                getvariable('ties') is distinct from 'input-order'
                or lead(as_ranked.input_rank) over in_rank_order is not distinct from as_ranked.input_rank
            ),
            false
        ) as tied_with_next
    from as_ranked
    where coalesce(getvariable('tie_bounds'), false)
    window in_rank_order as (partition by as_ranked.query_id order by as_ranked.rank)
),

final as (
    select
        scored.query_id,
        scored.k,
        scored.cg,
        scored.dcg,
        scored.idcg,
        scored.ndcg,
        worst.ndcg as ndcg_min,
        best.ndcg as ndcg_max,
        case
            when coalesce(getvariable('tie_bounds'), false) and scored.k is not null
                then coalesce(straddles.tied_with_next, false)
        end as ties_straddle_k
    from scored
    left join scored as worst
        on worst.ordering = 'worst' and worst.query_id = scored.query_id and worst.k is not distinct from scored.k
    left join scored as best
        on best.ordering = 'best' and best.query_id = scored.query_id and best.k is not distinct from scored.k
    left join straddles on straddles.query_id = scored.query_id and straddles.rank = scored.k
    where scored.ordering = 'retrieved'
)

select * from final
order by query_id, k nulls first;
