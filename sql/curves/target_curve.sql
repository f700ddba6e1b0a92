-- target_curve.sql: per query, cwl_eval's measures read over its first 1000 positions: INST and
-- INSQ (Moffat et al., ADCS 2015), NERR10 and NERR11 (Azzopardi et al., ICTIR 2021).
--
-- Reads: view target_runs (sql/curves/target_runs.sql: the ranks read, with their chances).
--
-- Variables: none.
--
-- Creates: view target_curve (query_id, inst_value, insq_value, nerr10_value, nerr11_value), one
-- row per query with a rank i <= 1000 of positive gain. Over the positions 1 to 1000 (past the
-- ranking or unjudged: gain 0) the reader goes on from i with c(i), reaches i with P(i) = c(1) *
-- ... * c(i - 1), and the value is the sum of P(i) * gain(i) over the sum of P(i): c(i) = ((i + a -
-- 1) / (i + a))^2, a = 2T - G(i) (INST, G(i) the gain at or above i) or 2T (INSQ); NERR10's p * (1
-- - gain(i)); NERR11's INSQ's c times (1 - gain(i)). From a row of target_runs to the next the
-- gain is 0, so P's sum there has a closed form: INST's P(i) * (i + b)^2 * (psi_1(i + b) -
-- psi_1(next + b)), psi_1 the trigamma function (its first ten terms added, then its asymptotic
-- series at z = x + 10 to z^-15, whose next term is below 1e-16 of it; the difference of its
-- leading terms 1/z taken as (next - i) / (z_i z_next), which a subtraction of two values about
-- 1 / (i + b) apart by about (next - i) / (i + b)^2 loses at a huge T); NERR10's and NERR11's the
-- chance of no stop at or above i times the sums over positions target_runs carries.

create or replace temp view target_curve as
with

-- psi_1(inst_from) - psi_1(inst_to): the first ten terms of each, then 1 / z at z = x + 10
reached as (
    select
        target_runs.*,
        target_runs.kept_before * (1.0 - target_runs.gain) as kept_past,
        1.0 / power(target_runs.inst_from, 2) - 1.0 / power(target_runs.inst_to, 2)
        + 1.0 / power(target_runs.inst_from + 1.0, 2) - 1.0 / power(target_runs.inst_to + 1.0, 2)
        + 1.0 / power(target_runs.inst_from + 2.0, 2) - 1.0 / power(target_runs.inst_to + 2.0, 2)
        + 1.0 / power(target_runs.inst_from + 3.0, 2) - 1.0 / power(target_runs.inst_to + 3.0, 2)
        + 1.0 / power(target_runs.inst_from + 4.0, 2) - 1.0 / power(target_runs.inst_to + 4.0, 2)
        + 1.0 / power(target_runs.inst_from + 5.0, 2) - 1.0 / power(target_runs.inst_to + 5.0, 2)
        + 1.0 / power(target_runs.inst_from + 6.0, 2) - 1.0 / power(target_runs.inst_to + 6.0, 2)
        + 1.0 / power(target_runs.inst_from + 7.0, 2) - 1.0 / power(target_runs.inst_to + 7.0, 2)
        + 1.0 / power(target_runs.inst_from + 8.0, 2) - 1.0 / power(target_runs.inst_to + 8.0, 2)
        + 1.0 / power(target_runs.inst_from + 9.0, 2) - 1.0 / power(target_runs.inst_to + 9.0, 2)
            as inst_near,
        1.0 / (target_runs.inst_from + 10.0) as from_z,
        1.0 / (target_runs.inst_to + 10.0) as to_z
    from target_runs
),

-- the sum of each measure's P over the positions from the rank to the next
spanned as (
    select
        reached.*,
        reached.inst_p * power(reached.inst_from, 2) * (
            reached.inst_near
            -- 1/z_from - 1/z_to and half of 1/z_from^2 - 1/z_to^2, without the subtraction
            + (reached.next_rank - reached.rank) * reached.from_z * reached.to_z
            * (1.0 + (reached.from_z + reached.to_z) / 2.0)
            + power(reached.from_z, 3) * (
                1.0 / 6.0 - power(reached.from_z, 2) * (1.0 / 30.0 - power(reached.from_z, 2) * (
                    1.0 / 42.0 - power(reached.from_z, 2) * (1.0 / 30.0 - power(reached.from_z, 2) * (
                        5.0 / 66.0 - power(reached.from_z, 2) * (691.0 / 2730.0 - power(reached.from_z, 2) * 7.0 / 6.0)
                    ))
                ))
            )
            - power(reached.to_z, 3) * (
                1.0 / 6.0 - power(reached.to_z, 2) * (1.0 / 30.0 - power(reached.to_z, 2) * (
                    1.0 / 42.0 - power(reached.to_z, 2) * (1.0 / 30.0 - power(reached.to_z, 2) * (
                        5.0 / 66.0 - power(reached.to_z, 2) * (691.0 / 2730.0 - power(reached.to_z, 2) * 7.0 / 6.0)
                    ))
                ))
            )
        ) as inst_reach,
        reached.patience_p * reached.kept_before
        + reached.kept_past * (reached.nerr10_sum_last - reached.nerr10_sum) as nerr10_reach,
        reached.insq_p * reached.kept_before
        + reached.kept_past * (reached.insq_sum_last - reached.insq_sum) as nerr11_reach
    from reached
),

final as (
    select
        spanned.query_id,
        sum(spanned.inst_p * spanned.gain order by spanned.rank asc)
        / sum(spanned.inst_reach order by spanned.rank asc) as inst_value,
        sum(spanned.insq_p * spanned.gain order by spanned.rank asc) / max(spanned.insq_total) as insq_value,
        sum(spanned.patience_p * spanned.kept_before * spanned.gain order by spanned.rank asc)
        / sum(spanned.nerr10_reach order by spanned.rank asc) as nerr10_value,
        sum(spanned.insq_p * spanned.kept_before * spanned.gain order by spanned.rank asc)
        / sum(spanned.nerr11_reach order by spanned.rank asc) as nerr11_value
    from spanned
    group by spanned.query_id
)

select * from final;
