"""The register of the engine's rule families: each hand-made rule, named once, with its origin.

A rule family is one thing the engine does beyond scoring text against text: a word table that
reads the question, a factor that favours some turns, a hop that brings others in. Each is named
here with the decision that chose it, the data it was tuned on, and the constants
(docs/ranking-constants.md) and module-level word and pattern tables it owns;
tests/test_rule_register.py fails when a table of ``retrieval/`` or ``views/`` belongs to no
family, and when switching a family off changes nothing on its fixture.

``RetrievalConfig.disabled_rules`` switches families off by name (``zeromem bench ablate``
measures each one's worth that way); the default, no family off, is the engine as tuned.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import InvalidInput


@dataclass(frozen=True, slots=True)
class RuleFamily:
    """One family of rules: ``name`` (what ``disabled_rules`` says), ``acts`` (what it does and
    what switching it off leaves), ``origin`` (the decision records that chose it),
    ``tuned_on`` (the data it was chosen on), ``constants`` (rows of docs/ranking-constants.md)
    and ``tables`` ("module.py:NAME", module-level word / pattern tables under retrieval/ or
    views/)."""

    name: str
    acts: str
    origin: str
    tuned_on: str
    constants: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()


RULE_FAMILIES: tuple[RuleFamily, ...] = (
    RuleFamily(
        "several_questions",
        "a message asking several questions also searches each one; their evidence takes turns "
        "(off: one search, as RetrievalConfig.answer_each_question=False)",
        "D-053, D-051", "MemDaily",
        tables=("retrieval/profile_zh.py:_ENDS", "retrieval/profile_zh.py:_ASKS",
                "retrieval/profile_zh.py:_JOINS")),
    RuleFamily(
        "speaker_aliases",
        "a question calling a speaker by another name (learned from greetings, or one spelling "
        "edit away) is read with the speaker's name (off: the question as written)",
        "D-063", "REALTALK tune chats 01/03/05",
        constants=("MIN_ADDRESSED", "DOMINANT_SHARE", "SELF_SHARE", "SHORT_NAME", "NEIGHBOUR_REACH"),
        tables=("retrieval/speaker_names.py:_CAP", "retrieval/speaker_names.py:_GREETING",
                "retrieval/speaker_names.py:_LEAD", "retrieval/speaker_names.py:_TAIL",
                "retrieval/speaker_names.py:_NOT_NAMES", "retrieval/speaker_names.py:_WORD",
                "retrieval/speaker_names.py:ROLES")),
    RuleFamily(
        "short_message_query",
        "in a memory of short messages the query embedding reads the question without the "
        "speakers' names (off: with them)",
        "D-063", "REALTALK tune chats", constants=("SHORT_MESSAGE_WORDS", "MAX_COUNTED_WORDS")),
    RuleFamily(
        "date_reading",
        "a date written in digits that reads two ways keeps the reading within the memory's "
        "dates (off: both readings)",
        "D-063", "REALTALK tune chats (chat03)", constants=("READING_SLACK_DAYS",)),
    RuleFamily(
        "routing",
        "route votes: relational questions let the graph view lead, local ones the hierarchy "
        "(off: every question takes the local route)",
        "D-008, D-058", "LoCoMo 5 dev conversations, HotpotQA pool",
        constants=("primary_weight", "local_primary_weight", "DEFAULT_RHO"),
        tables=("retrieval/profile.py:_YES_NO", "retrieval/profile.py:_BOUNDARY",
                "retrieval/profile.py:_NAME", "retrieval/profile.py:_TEMPORAL_WORDS",
                "retrieval/profile.py:_CALENDAR_WORDS", "retrieval/profile.py:ANSWER_TYPES",
                "retrieval/profile_zh.py:_ANSWER_TYPES", "retrieval/profile_zh.py:_FINAL_MA",
                "retrieval/profile_zh.py:_TIME_WORDS", "retrieval/profile_zh.py:_BOUNDARY",
                "retrieval/profile_zh.py:_QUESTION_WORDS")),
    RuleFamily(
        "graph_view",
        "view 1: PPR from the entities the query names and the best turns (off: the hierarchy "
        "view alone, as RetrievalConfig.use_graph=False)",
        "D-008, D-043, D-054 (the Zero-Mem paper's view)", "LoCoMo, HotpotQA pool",
        constants=("ppr_damping", "SEED_TURNS", "DENSE_ALIGN_MIN_COS", "DENSE_ALIGN_TOP",
                   "MAX_NGRAM", "SEED_MASS_RATIO", "ADJACENCY_WEIGHT", "PPR_TOL", "PPR_MAX_ITER"),
        tables=("views/graph.py:ALIAS_LABELS", "views/graph.py:_GENERIC_HEADS",
                "retrieval/prepared.py:NOT_NAME_LABELS")),
    RuleFamily(
        "lexical_refinement",
        "within view 1, the share of the query's hard terms (quoted phrases, numbers, names) "
        "found verbatim (off: PPR alone)",
        "D-008", "LoCoMo, HotpotQA pool", constants=("REFINE_SHARE", "REFINE_SHORTLIST"),
        tables=("retrieval/profile.py:_HARD_TERM",)),
    RuleFamily(
        "hierarchy_levels",
        "view 2 lifts the span, window and episode levels onto turns (off: the turn level only)",
        "D-008", "LoCoMo", constants=("LEVEL_WEIGHTS", "window_turns", "window_stride", "_MIN_SPAN_CHARS")),
    RuleFamily(
        "small_scope",
        "a memory under SMALL_SCOPE_TURNS turns drops the graph view, caps BM25's share and, "
        "with one speaker, keeps only turns and spans (off: the full engine)",
        "D-027", "MemDaily half A",
        constants=("SMALL_SCOPE_TURNS", "SMALL_SCOPE_LEXICAL_SHARE"),
        tables=("retrieval/engine.py:ONE_SPEAKER_LEVELS",)),
    RuleFamily(
        "aggregation",
        "questions that gather (all, how many, which …s) weigh the dense score more and spread "
        "evidence over sessions (off: as any question)",
        "D-008", "LoCoMo 5 dev conversations",
        constants=("AGGREGATE_LEXICAL_SHARE", "AGGREGATE_DIVERSITY"),
        tables=("retrieval/profile.py:_AGGREGATE", "retrieval/profile.py:_PLURAL_CATEGORY",
                "retrieval/profile_zh.py:_AGGREGATE")),
    RuleFamily(
        "subject_compat",
        "turns neither by nor naming the question's subject rank × (1 − SUBJECT_PENALTY) (off: × 1)",
        "D-008, D-063", "LoCoMo, REALTALK tune chats", constants=("SUBJECT_PENALTY",)),
    RuleFamily(
        "time_cues",
        "turns whose dates miss the question's time cue rank × (1 − TIME_PENALTY) (off: × 1)",
        "D-008, D-029", "LoCoMo", constants=("TIME_PENALTY", "TIME_SLACK_DAYS"),
        tables=("retrieval/query_profile.py:_BOUNDED_BY", "retrieval/query_profile.py:_ZH_BOUNDED_AFTER",
                "retrieval/query_profile.py:_ZH_BOUNDED_BEFORE")),
    RuleFamily(
        "question_turn_prior",
        "a turn that asks (ends in ?) ranks × question_turn_prior (off: × 1)",
        "D-008", "LoCoMo 5 dev conversations", constants=("question_turn_prior",)),
    RuleFamily(
        "asker_role",
        "a question about the asker (I / me / my) ranks turns not written as the user "
        "× (1 − ASKER_ROLE_PENALTY) (off: × 1)",
        "D-029, D-060", "LongMemEval-S dev", constants=("ASKER_ROLE_PENALTY",),
        tables=("retrieval/profile.py:_FIRST_PERSON", "retrieval/profile.py:_SECOND_PERSON",
                "retrieval/profile.py:_YOU_AS_OBJECT", "retrieval/profile.py:_REQUEST",
                "retrieval/profile.py:_RECALL_REQUEST")),
    RuleFamily(
        "answer_labels",
        "a list question whose category names an entity kind (cities, books) lifts turns naming "
        "such an entity × (1 + ANSWER_LABEL_BOOST) (off: no lift)",
        "D-028 round, D-024 register", "LoCoMo dev even half", constants=("ANSWER_LABEL_BOOST",),
        tables=("retrieval/profile.py:_ANSWER_LABELS",)),
    RuleFamily(
        "answer_kind",
        "a one-answer question (when / where / who / how long) lifts turns naming an entity of "
        "that kind × (1 + ANSWER_KIND_BOOST) (off: no lift)",
        "D-056", "LoCoMo dev even half", constants=("ANSWER_KIND_BOOST",),
        tables=("retrieval/query_profile.py:ANSWER_KIND_LABELS",)),
    RuleFamily(
        "titles",
        "a query naming a trace's title lifts that trace's turns (off: no title match)",
        "D-030", "HotpotQA pool even half",
        constants=("TITLE_WEIGHT", "LOWERCASE_TITLE_MATCH", "DISAMBIGUATED_TITLE")),
    RuleFamily(
        "reply_closure",
        "closure offers the reply after a primary, the turn before it and the answer to a "
        "question asked about it (off: no neighbour hops)",
        "D-008, D-028", "LoCoMo dev",
        constants=("closure_neighbours", "NEXT_DECAY", "NEXT_AFTER_QUESTION_DECAY", "PREV_DECAY",
                   "ANSWER_AFTER_QUESTION_DECAY")),
    RuleFamily(
        "burst_closure",
        "with speakers known, the reply is the first turn by someone else after a burst, and the "
        "burst's next message is its continuation (off: strict alternation)",
        "D-063", "REALTALK tune chats", constants=("REPLY_REACH", "CONTINUATION_DECAY")),
    RuleFamily(
        "title_hops",
        "closure hops from a top candidate to the trace titled after an entity it names (off: "
        "no title hops)",
        "D-024, D-030", "HotpotQA pool even half",
        constants=("TITLE_LINK_DECAY", "TITLE_LINK_SOURCES", "RESIDUAL_SHARE")),
    RuleFamily(
        "subject_hops",
        "a question that defines its subject through something else hops to turns sharing a top "
        "candidate's subject (off: no subject hops, as RetrievalConfig.closure_subject_hops=False)",
        "D-051", "MemDaily", constants=("SUBJECT_HOP_DECAY",),
        tables=("retrieval/profile.py:_BRIDGE", "retrieval/profile_zh.py:_BRIDGE")),
    RuleFamily(
        "coverage_gain",
        "except in a chat of short messages past a small scope (engine._chat_of_short_messages), "
        "selection adds a bonus for query terms the evidence so far lacks (off: plain ranking)",
        "D-008, D-068", "HotpotQA pool; REALTALK (short messages)",
        constants=("coverage_gain", "SHORT_MESSAGE_WORDS", "SMALL_SCOPE_TURNS")),
    RuleFamily(
        "supersession_order",
        "a superseded state is followed by its current one, newest first (off: score order)",
        "D-019, D-040", "LongMemEval-S knowledge updates"),
)

RULE_NAMES: tuple[str, ...] = tuple(family.name for family in RULE_FAMILIES)


def rule_family(name: str) -> RuleFamily:
    """The registered family called ``name`` (``InvalidInput`` naming the known ones if none)."""
    for family in RULE_FAMILIES:
        if family.name == name:
            return family
    raise InvalidInput(f"unknown rule family {name!r}; known: {', '.join(RULE_NAMES)}")


def checked_rules(names: Iterable[str]) -> frozenset[str]:
    """``names`` as a set, each a registered family (``InvalidInput`` otherwise)."""
    if isinstance(names, str):  # ("graph_view") written without its comma: one name, not letters
        names = (names,)
    return frozenset(rule_family(name).name for name in names)
