-- compat_curve.sql: per query, ir_measures' Compat (compatibility with an ideal ranking, Clarke,
-- Vtyurina and Smucker, TOIS 2021): the rank-biased overlap of the ranking with an ideal one.
--
-- Reads: views retrieved (sql/ranking/retrieved.sql) and judgments (sql/ranking/judgments.sql).
--
-- Variables:
--   SET VARIABLE curves = ['compat_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE compat_persistence = 0.95;  -- p, RBO's persistence (unset: 0.95, ir_measures')
--
-- Creates: view compat_curve (query_id, compat_value), one row per query with a ranking when
-- `curves` names it (else no row). The ideal holds the judged documents labelled above 0 by label
-- descending, then the run's score descending (0 when not retrieved, as ir_measures reads it), then
-- the ranking's order. O(i): the documents in the top i of both; compat_value: the sum over i <=
-- max(n, |ideal|) (n the ranking's length) of p^(i - 1) * O(i) / i over the ideal's own, O(i) =
-- min(i, |ideal|), in position order.

create or replace temp view compat_curve as
with

ranked as (
    select
        retrieved.query_id,
        retrieved.doc_id,
        retrieved.score,
        retrieved.rank
    from retrieved
    where retrieved.ordering = 'retrieved' and list_contains(getvariable('curves'), 'compat_curve')
),

lengths as (
    select ranked.query_id, count(*) as ranking_length from ranked group by ranked.query_id  -- noqa: LT09,LT14
),

ideal as (
    select
        j.query_id,
        r.rank,
        row_number() over (
            partition by j.query_id
            order by j.label desc, coalesce(r.score, 0.0) desc, r.rank asc nulls last, j.doc_id asc
        ) as ideal_rank
    from judgments as j
    inner join lengths on j.query_id = lengths.query_id
    left join ranked as r on j.query_id = r.query_id and j.doc_id = r.doc_id
    where j.label > 0
),

ideal_lengths as (
    select ideal.query_id, count(*) as ideal_length from ideal group by ideal.query_id  -- noqa: LT09,LT14
),

-- a document of both rankings is in the top i of both from i = the lower of its two places on
completed as (
    select
        ideal.query_id,
        greatest(ideal.rank, ideal.ideal_rank) as i,
        count(*) as documents
    from ideal
    where ideal.rank is not null
    group by ideal.query_id, greatest(ideal.rank, ideal.ideal_rank)
),

positions as (
    select
        lengths.query_id,
        coalesce(ideal_lengths.ideal_length, 0) as ideal_length,
        unnest(range(1, greatest(lengths.ranking_length, coalesce(ideal_lengths.ideal_length, 0)) + 1)) as i
    from lengths
    left join ideal_lengths on lengths.query_id = ideal_lengths.query_id
),

weighted as (
    select
        positions.query_id,
        positions.i,
        power(cast(coalesce(getvariable('compat_persistence'), 0.95) as double), positions.i - 1)
        / positions.i as weight,
        least(positions.i, positions.ideal_length) as ideal_overlap,
        sum(coalesce(completed.documents, 0)) over (
            partition by positions.query_id order by positions.i asc rows between unbounded preceding and current row
        ) as overlap
    from positions
    left join completed on positions.query_id = completed.query_id and positions.i = completed.i
),

-- an empty ideal (no document labelled above 0) scores 0
final as (
    select
        weighted.query_id,
        coalesce(
            sum(weighted.weight * weighted.overlap order by weighted.i asc)
            / nullif(sum(weighted.weight * weighted.ideal_overlap order by weighted.i asc), 0.0),
            0.0
        ) as compat_value
    from weighted
    group by weighted.query_id
)

select * from final;
