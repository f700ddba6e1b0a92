-- intent_curve.sql: per query and cutoff, the subtopics ndeval's intent-aware measures read.
--
-- Reads: views qrels (sql/aligned_inputs.sql: the judgments, each under its subtopic, null when
-- they judge none), retrieved (sql/ranking/retrieved.sql: the ranking by score, each rank with
-- its document) and cutoffs (sql/ranking/cutoffs.sql).
--
-- Variables:
--   SET VARIABLE curves = ['intent_curve'];  -- the curves the asked measures read (the registry's)
--   SET VARIABLE relevance_threshold = 1;    -- unset: a label > 0 is relevant
--
-- Creates: view intent_curve (query_id, k, intent_subtopics, intent_covered, intent_pairs), one
-- row per query and cutoff with a result relevant to a subtopic at or above k (k null: the whole
-- ranking) when `curves` names it (else no row): intent_subtopics is S, the query's subtopics
-- with a relevant judgment (ndeval's actual subtopics); intent_covered the subtopics with a
-- relevant result at or above k; intent_pairs the (rank, subtopic) pairs at or above k whose
-- result is relevant to the subtopic. A document is relevant to a subtopic when its label under
-- it is relevant (the signal relevant's range; ndeval binarises its judgments); an unjudged result,
-- or one relevant to no subtopic, takes its rank and adds nothing.

create or replace temp view intent_curve as
with

relevant_judgments as (
    select qrels.query_id, qrels.subtopic, qrels.doc_id
    from qrels
    where
        qrels.subtopic is not null
        and case
            when getvariable('relevance_threshold') is null then qrels.relevance > 0
            else qrels.relevance >= greatest(getvariable('relevance_threshold'), 0)
        end
        and list_contains(getvariable('curves'), 'intent_curve')
),

subtopics as (
    select relevant_judgments.query_id, count(distinct relevant_judgments.subtopic) as intent_subtopics
    from relevant_judgments
    group by relevant_judgments.query_id
),

-- each rank with each subtopic its result is relevant to; the first such rank covers the subtopic
pairs as (
    select
        ranks.query_id,
        ranks.rank,
        relevant_judgments.subtopic,
        row_number() over (
            partition by ranks.query_id, relevant_judgments.subtopic
            order by ranks.rank asc
        ) = 1 as covers
    from retrieved as ranks
    inner join relevant_judgments
        on ranks.query_id = relevant_judgments.query_id and ranks.doc_id = relevant_judgments.doc_id
    where ranks.ordering = 'retrieved'
),

final as (
    select
        pairs.query_id,
        cutoffs.k,
        max(subtopics.intent_subtopics) as intent_subtopics,
        count_if(pairs.covers) as intent_covered,
        count(*) as intent_pairs
    from pairs
    inner join subtopics on pairs.query_id = subtopics.query_id
    cross join cutoffs
    where cutoffs.k is null or pairs.rank <= cutoffs.k
    group by pairs.query_id, cutoffs.k
)

select * from final;
