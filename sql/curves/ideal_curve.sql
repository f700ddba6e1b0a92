-- ideal_curve.sql: each rank of a query's ideal ranking, with the sums that trec_eval's G,
-- Rndcg and ndcg_rel read off it.
--
-- Reads: views rankings (sql/ranking/rankings.sql) and running_sums (sql/counters/running_sums.sql).
--
-- Variables:
--   SET VARIABLE curves = ['gain_curve'];    -- the curves the asked measures read (the registry's)
--
-- Creates: view ideal_curve (query_id, rank, gain, idcg, ideal_cost, ideal_length, ideal_gain,
-- boundary), one row per rank j of the ideal ranking (its M positive gains g*(j)) when
-- `curves` names sql/curves/gain_curve.sql, which reads it (else no row): idcg, its running dcg;
-- ideal_cost, c(j) = max(g*(1), 1) + ... + max(g*(j), 1) (the registry's G);
-- ideal_length, M; ideal_gain, the sum of the M gains; boundary, whether the gain changes
-- after rank j (Rndcg's points).

create or replace temp view ideal_curve as
with

ideal as (
    select
        rankings.query_id,
        rankings.rank,
        rankings.credited_gain as gain,
        running_sums.dcg as idcg
    from rankings
    inner join running_sums
        on rankings.ranking = running_sums.ranking
        and rankings.query_id = running_sums.query_id
        and rankings.rank = running_sums.rank
    where rankings.ranking = 'ideal' and list_contains(getvariable('curves'), 'gain_curve')
),

final as (
    select
        ideal.query_id,
        ideal.rank,
        ideal.gain,
        ideal.idcg,
        sum(greatest(ideal.gain, 1.0)) over running as ideal_cost,
        count(*) over whole_ideal as ideal_length,
        sum(ideal.gain) over whole_ideal as ideal_gain,
        coalesce(lead(ideal.gain) over in_rank_order <> ideal.gain, true) as boundary
    from ideal
    window
        whole_ideal as (
            partition by ideal.query_id order by ideal.rank asc rows between unbounded preceding and unbounded following
        ),
        in_rank_order as (partition by ideal.query_id order by ideal.rank asc),
        running as (partition by ideal.query_id order by ideal.rank asc rows unbounded preceding)
)

select * from final;
