-- intent_pairs.sql: each rank of the ranking by score with each subtopic its result is relevant
-- to, the judgments per subtopic that ndeval's intent-aware measures read.
--
-- Reads: views qrels (sql/aligned_inputs.sql: the judgments, each under its subtopic, null when
-- they judge none) and retrieved (sql/ranking/retrieved.sql: the ranking by score, each rank with
-- its document).
--
-- Variables:
--   SET VARIABLE curves = ['intent_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE relevance_threshold = 1;    -- unset: a label > 0 is relevant
--
-- Creates: view intent_pairs (query_id, rank, subtopic, found_so_far, subtopic_relevant,
-- subtopics), a row per rank and subtopic whose result is relevant to the subtopic, when
-- `curves` names intent_curve (else no row): found_so_far counts the results relevant to the
-- subtopic at or above the rank (1: the rank covers it), subtopic_relevant the documents judged
-- relevant to it (R), subtopics the query's subtopics with a relevant judgment (S, ndeval's
-- actual subtopics). A document is relevant to a subtopic when its label under it is relevant
-- (the signal relevant's range; ndeval binarises its judgments); an unjudged result, or one
-- relevant to no subtopic, takes its rank and has no row. Judgments under no subtopic are under
-- one subtopic of their own ('').

create or replace temp view intent_pairs as
with

-- a judgment under no subtopic (qrels without subtopics, or a null one) is under one subtopic of
-- its own, '', as ir_measures reads judgments without subtopics (its subtopic '0')
relevant_judgments as (
    select qrels.query_id, coalesce(qrels.subtopic, '') as subtopic, qrels.doc_id
    from qrels
    where
        case
            when getvariable('relevance_threshold') is null then qrels.relevance > 0
            else qrels.relevance >= greatest(getvariable('relevance_threshold'), 0)
        end
        and list_contains(getvariable('curves'), 'intent_curve')
),

subtopic_relevant as (
    select relevant_judgments.query_id, relevant_judgments.subtopic, count(*) as subtopic_relevant
    from relevant_judgments
    group by relevant_judgments.query_id, relevant_judgments.subtopic
),

subtopics as (
    select subtopic_relevant.query_id, count(*) as subtopics
    from subtopic_relevant
    group by subtopic_relevant.query_id
),

found as (
    select
        ranks.query_id,
        ranks.rank,
        relevant_judgments.subtopic,
        row_number() over (
            partition by ranks.query_id, relevant_judgments.subtopic
            order by ranks.rank asc
        ) as found_so_far
    from retrieved as ranks
    inner join relevant_judgments
        on ranks.query_id = relevant_judgments.query_id and ranks.doc_id = relevant_judgments.doc_id
    where ranks.ordering = 'retrieved'
),

final as (
    select
        found.query_id,
        found.rank,
        found.subtopic,
        found.found_so_far,
        subtopic_relevant.subtopic_relevant,
        subtopics.subtopics
    from found
    inner join subtopic_relevant
        on found.query_id = subtopic_relevant.query_id and found.subtopic = subtopic_relevant.subtopic
    inner join subtopics on found.query_id = subtopics.query_id
)

select * from final;
