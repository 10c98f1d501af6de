"""Closure C(q) = Dedup(M(q) ∪ N_g(M(q)) ∪ N_h(M(q))) within the caller's turn budget (docs/design.md#closure).

- Hierarchy neighbours ``N_h``: the turn right after a primary candidate (the reply that usually
  carries the answer to a question-like turn) and, more weakly, the turn before it; after a
  statement that the next turn asks about ("Here's my painting for the show!" → "What inspired
  it?"), the answer to that question.
- Graph ``N_g``: the episode named after an entity a top candidate mentions by name (the
  second hop of a bridge question), and, when ``bridges`` > 0, turns that mention entities of
  two or more different primary candidates (off by default: ``RetrievalConfig.
  closure_graph_bridges``; on the dev sets they helped nowhere, docs/ranking-constants.md).
- Subject hops: for a question that defines what it asks about through something else, the
  turns that share the subject of a top candidate (its words the query does not use) and hold
  the part of the query it leaves open (docs/decisions/0051-subject-hops.md).
A closure unit inherits a decayed share of the score of the candidate(s) that brought it in, and
competes with the remaining ranked turns for the budget, so closure never crowds out a better
direct match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .select import ByNode

NEXT_DECAY = 0.55
NEXT_AFTER_QUESTION_DECAY = 0.8
PREV_DECAY = 0.35
# A statement, a question about it, its answer: the answer says more of what the statement
# started, in words of its own (docs/decisions/0028-closure-answers.md).
ANSWER_AFTER_QUESTION_DECAY = 0.75
# Burst-aware closure (``speaker`` given): how far past a burst the reply is looked for, and
# what the next message of the same burst inherits (docs/decisions/0063-real-chat.md).
REPLY_REACH = 6
CONTINUATION_DECAY = 0.55
BRIDGE_DECAY = 0.6
TITLE_LINK_DECAY = 1.1  # a hop may pass its source: a well-matching page the top hit names (docs/ranking-constants.md)
TITLE_LINK_SOURCES = 3
RESIDUAL_SHARE = 0.5  # of a hop target's match: the part of the query its source leaves unmatched
SUBJECT_HOP_DECAY = 1.0  # × the source's score × link × residual (docs/decisions/0051-subject-hops.md)


def closure_candidates(primary: list[int], scores: np.ndarray, *, session: np.ndarray,
                       question_like: np.ndarray, unit_entities: ByNode[list[int]],
                       entity_df: np.ndarray, turns_of_entities: Callable[[list[int]], tuple[np.ndarray, np.ndarray]],
                       next_turn: np.ndarray, prev_turn: np.ndarray, n_live: int | None = None,
                       neighbours: int = 1, bridges: int = 2,
                       titled_turns: dict[int, list[int]] | None = None,
                       relevance: np.ndarray | None = None,
                       prior: np.ndarray | None = None,
                       linking: Callable[[int], Sequence[int]] | None = None,
                       residual: Callable[[int, int], float] | None = None,
                       link: Callable[[int, int], float] | None = None,
                       hop_targets: Sequence[int] = (),
                       name: Callable[[int], str] = str,
                       speaker: Sequence[str | None] | None = None) -> dict[int, tuple[float, str]]:
    """Closure units with their derived scores and the reason they were added.

    ``prior`` is the query's per-turn factor the primary scores already carry (e.g. the asker's
    own turns first): a unit closure brings in is scaled by its own, as if it had been ranked.

    ``linking(node)``: the entities of a node that may lead to the page titled after them (the
    engine passes the ones mentioned as names); default: all of ``unit_entities[node]``.

    ``residual(source, target)``: how much of what the query asks that ``source`` does not
    contain ``target`` contains (0..1); a hop's target is judged half on it, half on its own
    ``relevance`` — the second hop answers the rest of a bridge question, not the part the
    first hop already matched.

    ``link(source, target)``: how much of what ``source`` says beyond the query ``target``
    repeats (0..1). With ``residual``, each of the first primaries hops to the ``hop_targets``
    that share its subject and hold what it leaves open, at score × link × residual — the
    second hop of a question that defines what it asks about through something else
    ("the event that lasts five weeks: where is it?").

    ``name(node)`` labels a node in the reasons (the engine passes its trace id).

    ``next_turn`` / ``prev_turn`` give each turn's neighbours in its session (-1: none);
    ``turns_of_entities(ids)`` the turns linked to each entity, as (turns, count per entity).

    ``speaker`` (each turn's speaker, None where unknown): real chat comes in bursts, one
    person sending several messages in a row, so the reply to a turn is the next turn by
    someone else after its burst ends (at most ``REPLY_REACH`` turns on), not the next turn;
    the next turn of the same burst is offered as its continuation. Without it, the next turn
    is the reply (strict alternation).
    """
    n = len(scores)
    chosen = set(primary)
    found: dict[int, tuple[float, str]] = {}

    def offer(node: int, score: float, reason: str) -> None:
        # A primary candidate is offered again only when the link is worth more than its own
        # match (a weak direct match that a strong candidate names outright moves up).
        if not 0 <= node < n:
            return
        if prior is not None:
            score *= float(prior[node])
        if node in chosen and score <= float(scores[node]):
            return
        if score > found.get(node, (-1.0, ""))[0]:
            found[node] = (score, reason)

    def reply(node: int) -> int:
        """The first turn by another speaker after ``node`` (its burst's reply), or -1."""
        after = int(next_turn[node])
        if speaker is None or speaker[node] is None:
            return after
        for _ in range(REPLY_REACH):
            if after < 0 or speaker[after] != speaker[node]:
                return after
            after = int(next_turn[after])
        return -1

    for node in primary:
        base = float(scores[node])
        if speaker is not None and neighbours > 0:
            answer, after = reply(node), int(next_turn[node])
            if answer >= 0:
                offer(answer, base * (NEXT_AFTER_QUESTION_DECAY if question_like[node] else NEXT_DECAY),
                      f"reply to {name(node)}")
            if after >= 0 and after != answer:
                offer(after, base * CONTINUATION_DECAY, f"continues {name(node)}")
            before = int(prev_turn[node])
            if before >= 0:
                offer(before, base * PREV_DECAY, f"context of {name(node)}")
            asked = answer if not question_like[node] else -1
            if asked >= 0 and question_like[asked] and (told := reply(asked)) >= 0 and told != node:
                offer(told, base * ANSWER_AFTER_QUESTION_DECAY, f"answer to the question after {name(node)}")
            continue
        after = before = node
        for step in range(1, neighbours + 1):
            after = int(next_turn[after]) if after >= 0 else -1
            before = int(prev_turn[before]) if before >= 0 else -1
            if after >= 0:
                decay = NEXT_AFTER_QUESTION_DECAY if question_like[node] and step == 1 else NEXT_DECAY
                offer(after, base * decay ** step, f"reply to {name(node)}")
            if before >= 0:
                offer(before, base * PREV_DECAY ** step, f"context of {name(node)}")
        asked = int(next_turn[node]) if neighbours > 0 and not question_like[node] else -1
        if asked >= 0 and question_like[asked] and next_turn[asked] >= 0:
            offer(int(next_turn[asked]), base * ANSWER_AFTER_QUESTION_DECAY,
                  f"answer to the question after {name(node)}")
    if bridges > 0 and len(primary) > 1:
        for other, mean, sources in _bridges(primary, scores, unit_entities, entity_df,
                                             turns_of_entities, bridges,
                                             n if n_live is None else n_live):
            offer(other, BRIDGE_DECAY * mean, "bridge between " + ", ".join(name(source) for source in sources))
    if titled_turns:
        # A candidate that names an entity with an episode of its own (a page titled after it)
        # points at that episode: the second hop of a bridge question. The hop keeps part of the
        # source's score, scaled by how well the target matches the query and what it leaves.
        own = relevance if relevance is not None else np.ones(n)
        for node in primary[:TITLE_LINK_SOURCES]:
            base = float(scores[node])
            for entity in (linking(node) if linking is not None else unit_entities[node]):
                for other in titled_turns.get(entity, ()):
                    if other == node or session[other] == session[node]:
                        continue
                    match = float(own[other])
                    if residual is not None:
                        match = (1 - RESIDUAL_SHARE) * match + RESIDUAL_SHARE * residual(node, other)
                    offer(other, TITLE_LINK_DECAY * base * (0.5 + 0.5 * match), f"named in {name(node)}")
    if link is not None and residual is not None:
        # The second hop through a shared subject rather than a named page: "the event that
        # lasts five weeks — where is it?" finds "X lasts five weeks"; the turn that says where X
        # is shares X with it (the words of the first hop the query does not use) and holds
        # what the query asks that the first hop does not.
        for node in primary[:TITLE_LINK_SOURCES]:
            base = float(scores[node])
            for other in hop_targets:
                if other == node:
                    continue
                open_part = residual(node, other)
                strength = open_part and open_part * link(node, other)  # link only where it counts
                if strength > 0:
                    offer(other, SUBJECT_HOP_DECAY * base * strength, f"shares a subject with {name(node)}")
    return found


def _bridges(primary: list[int], scores: np.ndarray, unit_entities: ByNode[list[int]],
             entity_df: np.ndarray, turns_of_entities: Callable[[list[int]], tuple[np.ndarray, np.ndarray]],
             limit: int, n: int) -> list[tuple[int, float, list[int]]]:
    """The ``limit`` best turns (outside ``primary``) that share a non-hub entity with two or
    more primary candidates: most sources first, then the best mean source score, then the
    lower node. Array work, because at scale an entity's turns run into the thousands."""
    hub_df = max(3, 0.05 * n)  # hubs bridge nothing
    holders: dict[int, list[int]] = {}  # entity → positions in primary of the turns naming it
    for k, node in enumerate(primary):
        for entity in unit_entities[node]:
            if entity_df[entity] <= hub_df:
                holders.setdefault(entity, []).append(k)
    if not holders:
        return []
    held = np.zeros((len(holders), len(primary)), dtype=bool)
    for row, positions in enumerate(holders.values()):
        held[row, positions] = True
    turns, counts = turns_of_entities(list(holders))
    others, which = np.unique(turns, return_inverse=True)
    sources = np.zeros((len(others), len(primary)), dtype=bool)
    np.logical_or.at(sources, which, held[np.repeat(np.arange(len(holders)), counts)])
    size = sources.sum(axis=1)
    keep = (size >= 2) & ~np.isin(others, primary)
    others, sources, size = others[keep], sources[keep], size[keep]
    if not len(others):
        return []
    mean = (sources * scores[np.asarray(primary)]).sum(axis=1) / size
    best = np.lexsort((others, -mean, -size))[:limit]
    return [(int(others[i]), float(mean[i]), sorted(int(primary[k]) for k in np.flatnonzero(sources[i])))
            for i in best]
