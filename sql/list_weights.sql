-- list_weights.sql: TF-Ranking's list weight of each evaluated query, from the results' weights. Input: views run
-- (its doc_weight), judgments (sql/ranking/judgments.sql), the table per_query; variables doc_weight_col (the
-- weight column; unset: no rows), doc_weights_in, relevance_threshold, run_path (for the error). Creates: view
-- list_weights (query_id, weight, weight_relevant, weight_listed): over each evaluated query's list (its results
-- weighing above 0), sum(w * gain) / sum(gain) (ndcg, cg, dcg, idcg), sum(w * relevant) / sum(relevant) (P,
-- recall, map, recip_rank, success) and 1 (average_precision_score); a list without gain (or relevance) weighs
-- the mean weight of the lists with some (1 when none has), a list whose results all weigh 0 weighs 0:
-- TF-Ranking's _per_example_weights_to_per_list_weights, as pipeline/weights.py computes it. The queries in the
-- means all weighing 0 is the command line's error, in its words.
create or replace temp view list_weights as
with
listed as (
    select
        run.query_id,
        run.doc_id,
        run.doc_weight,
        coalesce(judgments.gain, 0.0) as gain,
        case
            when getvariable('relevance_threshold') is null then coalesce(judgments.label > 0, false)
            else coalesce(judgments.label >= greatest(getvariable('relevance_threshold'), 0), false)
        end as is_relevant
    from run
    left join judgments on run.query_id = judgments.query_id and run.doc_id = judgments.doc_id
    where getvariable('doc_weight_col') is not null and run.doc_weight > 0
),

-- sums in doc_id order, averages in query order: the same bits every run, on Spark too (ndcg sql); each ratio
-- only of the lists with gain (a division by 0 fails under SET ieee_floating_point_ops = false)
sums as (
    select
        evaluated.query_id,
        count(listed.query_id) as results,
        coalesce(sum(listed.doc_weight * listed.gain order by listed.doc_id), 0.0) as weighted_gain,
        coalesce(sum(listed.gain order by listed.doc_id), 0.0) as gain,
        coalesce(
            sum(case when listed.is_relevant then listed.doc_weight else 0.0 end order by listed.doc_id), 0.0
        ) as weighted_relevant,
        coalesce(sum(case when listed.is_relevant then 1.0 else 0.0 end), 0.0) as relevant
    from (select distinct per_query.query_id from per_query) as evaluated
    left join listed on evaluated.query_id = listed.query_id
    group by evaluated.query_id
),

averages as (
    select
        coalesce(
            sum(case when sums.gain > 0 then sums.weighted_gain / sums.gain end order by sums.query_id)
            / nullif(count(*) filter (where sums.gain > 0), 0),
            1.0
        ) as gain_average,
        coalesce(
            sum(case when sums.relevant > 0 then sums.weighted_relevant / sums.relevant end order by sums.query_id)
            / nullif(count(*) filter (where sums.relevant > 0), 0),
            1.0
        ) as relevant_average
    from sums
),

weighed as (
    select
        sums.query_id,
        case
            when sums.results = 0 then 0.0
            when sums.gain > 0 then sums.weighted_gain / sums.gain
            else averages.gain_average
        end as weight,
        case
            when sums.results = 0 then 0.0
            when sums.relevant > 0 then sums.weighted_relevant / sums.relevant
            else averages.relevant_average
        end as weight_relevant,
        -- scikit-learn's AP is of one list, with no list weight: a plain mean of the lists
        case when sums.results = 0 then 0.0 else 1.0 end as weight_listed
    from sums, averages
),

-- the queries whose ndcg is in the means (as sql/summary.sql counts them) all weighing 0: 0/0
counted as (
    select
        count(*) as queries,
        coalesce(sum(weighed.weight), 0.0) as total
    from weighed
    where weighed.query_id in (
        select per_query.query_id from per_query
        where per_query.ndcg is not null
    )
)

select weighed.* from weighed, counted
where getvariable('doc_weight_col') is not null and (
    counted.queries = 0 or counted.total > 0 or error(
        cast(getvariable('run_path') as varchar) || ' (the list weights of doc_weight_col '''
        || getvariable('doc_weight_col') || ''''
        || if(getvariable('doc_weights_in') = 'qrels', ', read from the qrels', '') || '): all '
        || counted.queries || ' evaluated queries weigh 0, '
        || 'so their weighted mean is 0/0; give one of them a weight above 0'
    )
);
