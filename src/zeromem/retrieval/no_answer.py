"""The no-answer inputs of one search (``calibrate.NoAnswerInputs``), read off the prepared scope,
the query and the evidence chosen for it; ``calibrate.no_answer_score`` turns them into a score.

Most inputs look at the best three evidence turns. ``subject_unsaid`` looks at the sessions
those turns come from: which of the question's words the participant it is about wrote there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from .calibrate import NoAnswerInputs, addresses_listener, keyword_coverage
from .prepared import PreparedScope
from .profile import QueryProfile, named_things


def no_answer_inputs(prep: PreparedScope, profile: QueryProfile, dense_cosine: np.ndarray,
                     top_nodes: list[int], qtokens: Sequence[str], weights: dict[str, float],
                     tokenize: Callable[[str], list[str]]) -> NoAnswerInputs:
    """What ``calibrate.no_answer_score`` reads: the best three evidence turns ``top_nodes``
    (and their neighbours, for keywords) against the query's tokens ``qtokens`` (idf
    ``weights`` for those the memory holds); ``tokenize``: the index's tokenizer."""
    prev_turn, next_turn = prep.hier.prev_turn.view(), prep.hier.next_turn.view()
    texts = [prep.turn_lower[j] for i in top_nodes
             for j in (int(prev_turn[i]), i, int(next_turn[i])) if j >= 0]
    blob = " ".join(texts)
    names = [name.lower() for name in named_things(profile.names)]
    total = sum(weights.values())
    found = frozenset().union(*(prep.turn_terms[i] for i in top_nodes))
    distinct = set(qtokens)
    off_subject = subject_asks = subject_addresses = 0.0
    if _one_subject(profile) and top_nodes:
        first = profile.subject.split()[0].lower()  # type: ignore[union-attr]
        own = [i for i in top_nodes if (prep.turn_speaker[i] or "").lower().startswith(first)]
        off_subject = (len(top_nodes) - len(own)) / len(top_nodes)
        subject_asks = sum(bool(prep.question_like[i]) for i in own) / len(top_nodes)
        subject_addresses = sum(addresses_listener(prep.turn_lower[i]) for i in own) / len(top_nodes)
    return NoAnswerInputs(
        keyword_coverage=keyword_coverage(profile.keywords, texts),
        term_coverage=sum(w for t, w in weights.items() if t in found) / total if total else 0.0,
        unseen_terms=sum(1 for t in distinct if t not in weights) / len(distinct) if distinct else 0.0,
        top_cosine=float(np.clip(dense_cosine[top_nodes[0]], 0.0, 1.0)) if top_nodes else 0.0,
        names_missing=sum(name not in blob for name in names) / len(names) if names else 0.0,
        off_subject=off_subject, subject_asks=subject_asks, subject_addresses=subject_addresses,
        subject_unsaid=subject_unsaid(prep, profile, qtokens, weights, tokenize, top_nodes))


def subject_unsaid(prep: PreparedScope, profile: QueryProfile, qtokens: Sequence[str],
                   weights: dict[str, float], tokenize: Callable[[str], list[str]],
                   top_nodes: Sequence[int]) -> float:
    """The idf-weighted share of the query's distinct tokens that the participant the question
    is about did not write in the sessions of the best evidence turns ``top_nodes``; 0 when it
    is about no one participant or there is no evidence.

    The participant is the question's one named speaker ("What did Jon…"), else, for a question
    about the asker ("How often do I see Dr. Johnson?"), the turns written in the role "user" —
    only where other roles wrote turns too. The sessions are where the evidence for the
    question was found: "How long have I lived in my apartment in Shinjuku?" finds the session
    where the user talks of their apartment, and "Shinjuku" is not among their words there (it
    may be elsewhere in a long memory, in another context). The speakers' own names do not count
    (one seldom writes one's own name); ``weights``: the idf of each token the memory holds
    (``select.query_term_weights``), and a token no turn holds counts with the idf of a df of 0.
    """
    wrote = _participant_wrote(prep, profile)
    if wrote is None or not top_nodes:
        return 0.0
    names = {t for speaker in prep.speakers for t in tokenize(speaker)}
    tokens = [t for t in dict.fromkeys(qtokens) if t not in names]
    if not tokens:
        return 0.0
    lexical = prep.index.turns.lexical
    session = prep.hier.turn_session
    near = np.unique(session[np.asarray(top_nodes)])
    unseen_idf = math.log(1.0 + (prep.n_live + 0.5) / 0.5)
    total = unsaid = 0.0
    for token in tokens:
        held = weights.get(token)
        idf = unseen_idf if held is None else held
        total += idf
        if held is None:
            unsaid += idf
            continue
        slots = lexical.documents(token)
        if not wrote(slots[np.isin(session[slots], near)]):
            unsaid += idf
    return unsaid / total if total else 0.0


def _one_subject(profile: QueryProfile) -> bool:
    return bool(profile.subject) and len(profile.mentioned_speakers) < 2


def _participant_wrote(prep: PreparedScope, profile: QueryProfile) -> Callable[[np.ndarray], bool] | None:
    """For turn slots, whether the participant the question is about wrote any of them (None:
    the question is about no one participant)."""
    if _one_subject(profile):
        first = profile.subject.split()[0].lower()  # type: ignore[union-attr]
        speakers = prep.turn_speaker
        return lambda slots: any((speakers[s] or "").lower().startswith(first) for s in slots.tolist())
    if profile.about_asker:
        by_user = prep.by_user
        alive = prep.alive
        live_user = by_user[: len(alive)][alive]
        if live_user.any() and not live_user.all():
            return lambda slots: bool(by_user[slots].any())
    return None
