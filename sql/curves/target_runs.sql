-- target_runs.sql: each rank that cwl_eval's INST, INSQ, NERR10 and NERR11 read in closed form:
-- each of positive gain, and rank 1, with the chances of reaching it and the sums to the next.
--
-- Reads: view cwl_gains (sql/curves/cwl_gains.sql: the ranks of positive gain).
--
-- Variables:
--   SET VARIABLE curves = ['target_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE cwl_target = 1;             -- T, the gain the reader seeks (unset: 1, ir_measures')
--   SET VARIABLE rbp_persistence = 0.9;      -- NERR10's p (unset: 0.9, ir_measures' and ours)
--
-- Creates: view target_runs, one row per rank i <= 1000 of positive gain and per rank 1 (gain 0
-- where none) of a query with one, when `curves` names target_curve: gain; next_rank (none: 1001);
-- inst_from, inst_to (i + b, next_rank + b; b = 2T - 1 - the gain at or above i) and INST's P(i),
-- the product of ((j + b_j) / (next_j + b_j))^2 over the rows j above (its c telescopes between
-- rows); INSQ's P(i) = (2T / (i + 2T - 1))^2; p^(i - 1); kept_before (the chance of no stop above
-- i); the sums over positions 1..i and 1..next_rank - 1 of INSQ's P and p^(j - 1),
-- and INSQ's over 1..1000 (insq_total). P is exp of a sum of logarithms (Spark has no product
-- aggregate; cwl_target > 0.5 keeps i + b > 0); 1 - gain is 0 at a gain of 1: past one, P is 0.

create or replace temp view target_runs as
with

settings as (
    select
        cast(coalesce(getvariable('cwl_target'), 1.0) as double) as wanted,
        cast(coalesce(getvariable('rbp_persistence'), 0.9) as double) as patience
),

positions as (
    select unnest(range(1, 1001)) as i
),

-- the sums over the positions 1 to i of INSQ's P and of p^(i - 1), added in position order
position_sums as (
    select
        positions.i,
        sum(power(2.0 * settings.wanted / (positions.i + 2.0 * settings.wanted - 1.0), 2)) over upward as insq_sum,
        sum(power(settings.patience, positions.i - 1)) over upward as nerr10_sum
    from positions
    cross join settings
    window upward as (order by positions.i asc rows between unbounded preceding and current row)
),

-- the ranks read: each of positive gain, and rank 1 where it has none
read_ranks as (
    select cwl_gains.query_id, cwl_gains.rank, cwl_gains.gain from cwl_gains
    where list_contains(getvariable('curves'), 'target_curve')
    union all
    select cwl_gains.query_id, 1 as rank, 0.0 as gain from cwl_gains
    where list_contains(getvariable('curves'), 'target_curve')
    group by cwl_gains.query_id
    having min(cwl_gains.rank) > 1
),

-- each with the next, INST's b, and its chance of no stop as a logarithm where above 0
read as (
    select
        read_ranks.*,
        coalesce(lead(read_ranks.rank) over (partition by read_ranks.query_id order by read_ranks.rank asc), 1001)
            as next_rank,
        2.0 * settings.wanted - 1.0 - sum(read_ranks.gain) over (
            partition by read_ranks.query_id
            order by read_ranks.rank asc rows between unbounded preceding and current row
        ) as inst_b,
        case when read_ranks.gain < 1.0 then ln(1.0 - read_ranks.gain) else 0.0 end as kept_ln,
        case when read_ranks.gain >= 1.0 then 1 else 0 end as stopped
    from read_ranks
    cross join settings
),

final as (
    select
        read.query_id,
        read.rank,
        read.gain,
        read.next_rank,
        read.rank + read.inst_b as inst_from,
        read.next_rank + read.inst_b as inst_to,
        exp(coalesce(sum(2.0 * ln((read.rank + read.inst_b) / (read.next_rank + read.inst_b))) over above, 0.0))
            as inst_p,
        power(2.0 * settings.wanted / (read.rank + 2.0 * settings.wanted - 1.0), 2) as insq_p,
        power(settings.patience, read.rank - 1) as patience_p,
        case
            when coalesce(sum(read.stopped) over above, 0) > 0 then 0.0
            else exp(coalesce(sum(read.kept_ln) over above, 0.0))
        end as kept_before,
        at_rank.insq_sum,
        at_rank.nerr10_sum,
        at_last.insq_sum as insq_sum_last,
        at_last.nerr10_sum as nerr10_sum_last,
        at_depth.insq_sum as insq_total
    from read
    cross join settings
    inner join position_sums as at_rank on read.rank = at_rank.i
    inner join position_sums as at_last on read.next_rank - 1 = at_last.i
    inner join position_sums as at_depth on at_depth.i = 1000
    window above as (partition by read.query_id order by read.rank asc rows between unbounded preceding and 1 preceding)
)

select * from final;
