-- list_weight_range.sql: the first value of a weighted evaluation outside float64's normal numbers.
--
-- Input: the table per_query, the view list_weights (sql/list_weights.sql).
--
-- Creates: view unrepresentable_weights (query_id, measured, amount, too_large, step), no row or one: in
-- pipeline/weights.py's order (check_weighted_values_representable), the first overflow in cg, dcg, idcg,
-- then in a list weight, then the first subnormal idcg, then list weight (weights so large that weight x gain
-- overflows, or so small that few digits are kept), which sql/list_weighted_summary.sql refuses.

create or replace temp view unrepresentable_weights as
with

-- an overflow in cg, dcg, idcg (part 1), a list weight (2); a subnormal idcg, weight
checked as (
    select 1 as part, q.query_id, q.k, 1 as name_order, 'cg' as measured, q.cg as amount from per_query as q
    union all
    select 1 as part, q.query_id, q.k, 2 as name_order, 'dcg' as measured, q.dcg as amount from per_query as q
    union all
    select 1 as part, q.query_id, q.k, 3 as name_order, 'idcg' as measured, q.idcg as amount from per_query as q
    union all
    select 2 as part, w.query_id, null as k, 1 as name_order, 'weight' as measured, w.weight as amount
    from list_weights as w
    union all
    select 2 as part, w.query_id, null as k, 2 as name_order, 'weight_P' as measured, w.weight_relevant as amount
    from list_weights as w
),

final as (
    select
        checked.query_id,
        checked.measured,
        checked.amount,
        abs(checked.amount) = cast('inf' as double) as too_large,
        checked.part + case when abs(checked.amount) = cast('inf' as double) then 0 else 2 end as step
    from checked
    where
        abs(checked.amount) = cast('inf' as double)
        or (checked.part = 2 or checked.measured = 'idcg')
        and checked.amount > 0 and checked.amount < 2.2250738585072014e-308
    order by step asc, checked.query_id asc, checked.k asc nulls first, checked.name_order asc
    limit 1
)

select * from final;
