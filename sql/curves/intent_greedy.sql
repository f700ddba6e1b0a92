-- intent_greedy.sql: ndeval's ideal ranking of each query's judgments per subtopic, chosen
-- greedily rank by rank (its idealResult), which alpha_nDCG, nERR_IA and nNRBP divide by.
--
-- Reads: views qrels (sql/aligned_inputs.sql) and cutoffs (sql/ranking/cutoffs.sql). Variables:
--   SET VARIABLE measures = ['alpha_nDCG', 'nERR_IA', 'nNRBP'];  -- none of them: no row
--   SET VARIABLE relevance_threshold = 1;    -- unset: a label > 0 is relevant
--
-- Creates: view intent_greedy (query_id, rank, gain), the ideal's ranks for each query with a
-- document relevant to a subtopic (as in intent_pairs): each the document not yet placed of the
-- largest gain, the sum over its subtopics of 0.5^(documents above relevant to it), of equal
-- gains the greatest doc_id (ndeval's last); to min(relevant documents, greatest(largest k,
-- nNRBP's 55 + ceil(log2 S))): deeper ranks add < 2^-53 to ndeval's NRBP sum (>= 1), no bit.

create or replace temp view intent_greedy as
with

numbered as (
    select
        qrels.query_id,
        cast(qrels.doc_id as varchar) as doc_id,
        dense_rank() over (partition by qrels.query_id order by coalesce(qrels.subtopic, '') asc) as subtopic
    from qrels
    where
        case
            when getvariable('relevance_threshold') is null then qrels.relevance > 0
            else qrels.relevance >= greatest(getvariable('relevance_threshold'), 0)
        end
        and (
            list_contains(getvariable('measures'), 'alpha_nDCG')
            or list_contains(getvariable('measures'), 'nERR_IA')
            or list_contains(getvariable('measures'), 'nNRBP')
        )
),

-- each document at its position (by doc_id: the largest {gain, position} is ndeval's pick)
documents as (
    select
        numbered.query_id,
        row_number() over (partition by numbered.query_id order by numbered.doc_id asc) as position,
        list_sort(list({ 'subtopic': numbered.subtopic, 'gain': cast(1.0 as double) })) as subtopics,
        max(max(numbered.subtopic)) over (partition by numbered.query_id) as subtopic_count
    from numbered
    group by numbered.query_id, numbered.doc_id
),

candidates as (
    select
        documents.query_id,
        list_sort(list({ 'position': documents.position, 'subtopics': documents.subtopics })) as documents,
        least(count(*), greatest((select max(cutoffs.k) from cutoffs), case
            when list_contains(getvariable('measures'), 'nNRBP')
                then 55 + cast(ceil(log2(max(documents.subtopic_count))) as bigint)
            else 0
        end)) as ideal_depth
    from documents
    group by documents.query_id
),

-- rank by rank: the pick (named by a one-element list's lambda), its gain kept, its subtopics'
-- gains halved in the documents left; over one empty state per rank (DuckDB 1 folds no other)
greedy as (
    select
        candidates.query_id,
        list_reduce(  -- noqa: PRS, RF03
            list_transform(range(candidates.ideal_depth), lambda r: {
                'remaining': list_filter(candidates.documents, lambda d: false),
                'ranks': cast([] as struct(rank bigint, gain double)[])
            }),
            lambda state, empty: list_transform(
                [list_max(list_transform(state.remaining, lambda d: {
                    'gain': list_reduce(
                        list_transform(d.subtopics, lambda s: s.gain), lambda total, g: total + g, cast(0.0 as double)
                    ),
                    'position': d.position,
                    'numbers': list_transform(d.subtopics, lambda s: s.subtopic)
                }))],
                lambda best: {
                    'remaining': list_transform(
                        list_filter(state.remaining, lambda d: d.position <> best.position),
                        lambda d: {'position': d.position, 'subtopics': list_transform(d.subtopics, lambda s: {
                            'subtopic': s.subtopic,
                            'gain': if(list_contains(best.numbers, s.subtopic), s.gain * 0.5, s.gain)
                        })}
                    ),
                    'ranks': list_append(
                        state.ranks, {'rank': cast(array_length(state.ranks) + 1 as bigint), 'gain': best.gain}
                    )
                }
            )[1],
            {'remaining': candidates.documents, 'ranks': cast([] as struct(rank bigint, gain double)[])}
        ).ranks as ranks
    from candidates
),

final as (
    select greedy.query_id, placed.step.rank, placed.step.gain
    from greedy cross join unnest(greedy.ranks) as placed (step)
)

select * from final;
