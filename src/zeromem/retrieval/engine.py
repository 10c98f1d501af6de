"""The Zero-Mem engine: one query in, a ranked, provenance-bearing evidence set out.

profile φ(q) → route ρ → view 1 (graph PPR + lexical refinement) and view 2 (hierarchy) →
fusion → top-K primary → closure → calibration → at most ``k`` turns of evidence.
No step calls a language model; the only encoder touched per query is the query embedding.
A small scope (``PreparedScope.small``: fewer than ``prepared.SMALL_SCOPE_TURNS`` turns) is
ranked without the graph view (its few entities are in most turns), and, when one speaker wrote
it, without windows and episodes.

The question is read once (``query_reading.read_query``: a frozen ``Query`` of the searched
text, its profile, tokens, hard terms and parts) and every step reads its fields, never the text.

A search may be told to ``skip`` channels whose encoder is down (docs/design.md#degraded-search):
``"dense"`` (no query embedding: BM25 alone scores every level, entities align by
name only) and ``"graph"`` (the graph view gets no weight; the hierarchy view answers).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..blas import one_blas_thread
from ..config import RetrievalConfig
from ..encoders.bundle import EMBEDDER, EncoderFailure
from ..encoders.entities import normalize_title
from ..indexes.topk import top_indices
from ..types import Evidence, Provenance
from ..views.graph import align_entities, query_ngrams
from ..views.hierarchy import LEVEL_WEIGHTS, hierarchy_scores
from .calibrate import NoAnswerInputs, no_answer_score, time_compat
from .closure import closure_candidates
from .evidence_order import newest_state_first, taking_turns, with_current_states
from .fuse import fuse, normalize_live
from .no_answer import no_answer_inputs
from .prepared import PreparedScope
from .profile import QueryProfile
from .query_reading import Query, read_query
from .route import Route, route
from .rules import checked_rules
from .select import query_term_weights, select_evidence
from .turn_scores import LEXICAL_SHARE, score_candidate_turns, score_every_turn

REFINE_SHARE = 0.25  # within the graph view: lexical refinement vs PPR
REFINE_SHORTLIST = 100
# Aggregation questions ("What activities does X do?") name a category, not the words of its
# members (pottery, camping): the dense score leads, and their evidence is spread over sessions.
AGGREGATE_LEXICAL_SHARE = 0.35
ANSWER_LABEL_BOOST = 1.0  # list questions: × (1 + this) for turns naming an entity of the listed kind
ANSWER_KIND_BOOST = 0.25  # one-answer questions: × (1 + this) for turns naming an entity of the asked kind
# "What did I…" asked of an assistant's memory: the user's own turns say what happened to them;
# the assistant's replies (often long, and echoing the user's words) rank × (1 − this).
ASKER_ROLE_PENALTY = 0.7
AGGREGATE_DIVERSITY = 0.9  # δ for them when the configured session_diversity is plain ranking
LOWERCASE_TITLE_MATCH = 0.5  # title match strength when the query writes a capitalized title in lower case
TITLE_WEIGHT = 1.0  # a trace whose title (Trace.title) the query names outright
# In a small scope (``PreparedScope.small``: fewer than prepared.SMALL_SCOPE_TURNS live turns)
# the graph view gets no weight and the dense cosine leads each level's score (BM25 share at most
# SMALL_SCOPE_LEXICAL_SHARE). In such a memory written by one speaker (notes, facts told one by
# one) a window or a day's episode joins statements that do not answer each other and covers
# much of the memory: only the turn and span levels count.
SMALL_SCOPE_LEXICAL_SHARE = 0.35
ONE_SPEAKER_LEVELS = ("turn", "span")
DENSE, GRAPH = "dense", "graph"  # the channels a degraded search can skip


@dataclass
class SearchResult:
    """What ``Memory.search_detailed`` returns: the evidence (best first) and how it was found.

    ``profile`` is the query's profile and ``route`` the retrieval route it took;
    ``no_answer_score`` (0–1) is high when memory probably holds no answer, read off
    ``no_answer_inputs`` (None for an empty memory); ``timings`` are milliseconds per stage;
    ``degraded`` says what the search had to do without.
    """

    evidence: list[Evidence]
    profile: QueryProfile
    route: Route
    no_answer_score: float
    timings: dict[str, float] = field(default_factory=dict)
    # What this answer had to do without, e.g. "embedder: <why>; skipped: dense similarity";
    # empty when every component worked (retrieval/retriever.py fills it).
    degraded: list[str] = field(default_factory=list)
    # What the no-answer score was computed from (`zeromem bench fit-no-answer` fits on them).
    no_answer_inputs: NoAnswerInputs | None = None
    # The question as the search read it (query_reading.read_query); ``profile`` is its profile.
    query: Query | None = None


@dataclass(slots=True)
class _TurnViews:
    """Every turn's scores from the two views (and what an evidence's ``why`` reports)."""

    lifted: dict[str, np.ndarray]  # each level's score lifted onto turns, and "title"
    hierarchy: np.ndarray  # view 2
    ppr: np.ndarray  # view 1: PPR mass, normalized
    refine: np.ndarray  # view 1: share of the query's hard terms found verbatim
    graph: np.ndarray  # view 1
    dense_cosine: np.ndarray  # the turn's own cosine to the query
    nodes: np.ndarray | None  # the turns that were scored (None: all of them)


class Engine:
    def __init__(self, config: RetrievalConfig, tokenize: Callable[[str], list[str]],
                 encode_query: Callable[[str], np.ndarray]) -> None:
        self.config = config
        self.tokenize = tokenize
        self.encode_query = encode_query
        self.off = checked_rules(config.disabled_rules)  # rule families switched off (rules.py)

    def search(self, prep: PreparedScope, query: str, *, k: int = 10, session: str | None = None,
               as_of: dt.datetime | None = None, allowed_rowids: set[int] | None = None,
               skip: Collection[str] = (), hidden_rowids: Collection[int] = (),
               asked_on: dt.date | None = None) -> SearchResult:
        """Evidence for ``query`` from ``prep``; ``skip``: channels to do without (``"dense"``,
        ``"graph"``); ``hidden_rowids``: traces no evidence may come from (expired ones);
        ``asked_on``: the day the question is asked ("last week" counts from it). A
        failing query embedding raises ``EncoderFailure`` (the caller may search again skipping
        ``"dense"``)."""
        t0 = time.perf_counter()
        read = read_query(query, prep, tokenize=self.tokenize, asked_on=asked_on, off=self.off,
                          each_question=self.config.answer_each_question)
        t_read = time.perf_counter()
        qvec = None if DENSE in skip else self._query_vector(read.embedding_text)
        t_enc = time.perf_counter()
        clock = _Clock(t0, t_read, t_enc)
        # The per-query arrays are small: a multi-threaded BLAS spends more time waking its
        # threads than computing (measured ~100x slower on a busy 2-core machine).
        with one_blas_thread():
            result = self._search(prep, read, qvec, clock, k, session, as_of, allowed_rowids,
                                  GRAPH in skip, hidden_rowids)
            if not read.parts:
                return result
            # A message that asks two things needs evidence for both: each question is searched
            # on its own, and their evidence takes turns after the whole message's best.
            answers = [self._search(prep, part, None if qvec is None else self._query_vector(part.embedding_text),
                                    clock, k, session, as_of, allowed_rowids, GRAPH in skip,
                                    hidden_rowids).evidence for part in read.parts]
        result.evidence = taking_turns(result.evidence, answers, k)
        result.timings["total_ms"] = (time.perf_counter() - t0) * 1000
        return result

    def _query_vector(self, text: str) -> np.ndarray:
        try:
            return self.encode_query(text)
        except Exception as exc:  # whatever broke, the embedder is down
            raise EncoderFailure(EMBEDDER, exc) from exc

    def _search(self, prep: PreparedScope, query: Query, qvec: np.ndarray | None, clock: _Clock,
                k: int, session: str | None, as_of: dt.datetime | None,
                allowed_rowids: set[int] | None, skip_graph: bool,
                hidden_rowids: Collection[int] = ()) -> SearchResult:
        """The pipeline: route the query by its profile → score every turn in both views → fuse
        and calibrate → primary candidates and their closure → select at most ``k`` turns →
        evidence with provenance, and the no-answer score."""
        cfg, off = self.config, self.off
        profile = query.profile
        plan = (route(profile, cfg.primary_weight, cfg.local_primary_weight) if "routing" not in off
                else Route("local", cfg.local_primary_weight))
        qtokens = query.tokens
        if prep.n_live == 0:
            return SearchResult([], profile, plan, 1.0, clock.timings(), query=query)
        budget = max(1, int(k))
        eligible = _eligible(prep, session, as_of, allowed_rowids, hidden_rowids) & prep.alive
        small = prep.small and "small_scope" not in off
        views = self._views(prep, query, qvec, eligible, small)
        prior = _role_prior(prep, profile) if "asker_role" not in off else None
        score, compat, unboosted = self._ranking(prep, profile, plan, views, eligible, skip_graph or small, prior)
        weights = query_term_weights(qtokens, prep.term_df, prep.n_live)  # closure and selection
        hops = profile.bridge and cfg.closure_subject_hops and "subject_hops" not in off
        chosen = self._candidates(prep, score, eligible, budget, prior, weights, hops=hops)
        ranked, superseded = self._selection(prep, query, weights, chosen, budget, as_of, eligible)
        judged = ranked
        if unboosted is not None:
            # "No answer" is judged on the evidence the content alone chooses: for a "when"
            # question about something that never happened, the kind boost brings up a dated
            # turn about something else, which the fitted model would read as an answer (D-056).
            judged, _ = self._selection(prep, query, weights,
                                        self._candidates(prep, unboosted, eligible, budget, prior, weights, hops=hops),
                                        budget, as_of, eligible)
        evidence = [self._evidence(prep, node, value, reason, superseded, {
            "graph": float(views.graph[node]), "ppr": float(views.ppr[node]),
            "lexical_refinement": float(views.refine[node]), "hierarchy": float(views.hierarchy[node]),
            **{f"h_{lvl}": float(v[node]) for lvl, v in views.lifted.items()},
            "dense_cosine": float(views.dense_cosine[node]), "compatibility": float(compat[node]),
            "route": plan.primary, "small_scope": small}) for node, (value, reason) in ranked]
        inputs = no_answer_inputs(prep, profile, views.dense_cosine, [node for node, _ in judged[:3]], qtokens,
                                  weights, self.tokenize)
        return SearchResult(evidence, profile, plan, no_answer_score(inputs), clock.timings(),
                            no_answer_inputs=inputs, query=query)

    def _views(self, prep: PreparedScope, query: Query, qvec: np.ndarray | None,
               eligible: np.ndarray, small: bool) -> _TurnViews:
        """Every turn scored by view 2 (BM25 + cosine at every level, lifted onto turns by the
        hierarchy, plus a named episode) and view 1 (PPR from the aligned entities and the
        best turns, then lexical refinement). Large scopes score their candidate turns only."""
        cfg, off = self.config, self.off
        index, profile, qtokens = prep.index, query.profile, query.tokens
        title = _title_match(query.text, prep) if "titles" not in off else np.zeros(prep.n_turns)
        grams = query_ngrams(list(profile.words))
        aligned = align_entities(prep.graph, grams, qvec, index)
        share = AGGREGATE_LEXICAL_SHARE if profile.aggregation and "aggregation" not in off else LEXICAL_SHARE
        levels = None if "hierarchy_levels" not in off else {"turn": LEVEL_WEIGHTS["turn"]}
        if small:
            share = min(share, SMALL_SCOPE_LEXICAL_SHARE)
            if len(prep.speakers) <= 1:
                levels = {level: LEVEL_WEIGHTS[level] for level in ONE_SPEAKER_LEVELS
                          if levels is None or level in levels}
        if qvec is None:
            share = 1.0  # no cosine to mix in: BM25 is each level's whole score
        if prep.n_live > cfg.large_scope_turns:
            scores = score_candidate_turns(prep, qtokens, qvec, aligned, damping=cfg.ppr_damping,
                                           per_source=cfg.large_scope_candidates,
                                           required=np.flatnonzero(title), eligible=eligible,
                                           lexical_share=share)
        else:
            scores = score_every_turn(prep, qtokens, qvec, aligned, damping=cfg.ppr_damping,
                                      lexical_share=share)
        lifted = scores.lifted
        lifted["title"] = title
        hier = hierarchy_scores(lifted, levels) + TITLE_WEIGHT * lifted["title"]
        ppr = normalize_live(scores.ppr, index.turns.live())
        # Verbatim term checks are string work: spend them only on turns that can still win.
        shortlist = top_indices(np.where(prep.alive, _settle(np.maximum(hier, ppr)), -1.0), REFINE_SHORTLIST)
        refine = _lexical_refinement(query.hard_terms, prep.turn_lower, shortlist)
        graph = (1 - REFINE_SHARE) * ppr + REFINE_SHARE * refine if "lexical_refinement" not in off else ppr
        return _TurnViews(lifted, hier, ppr, refine, graph, scores.dense_cosine, scores.nodes)

    def _ranking(self, prep: PreparedScope, profile: QueryProfile, plan: Route, views: _TurnViews,
                 eligible: np.ndarray, skip_graph: bool,
                 prior: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(each turn's final score, -1 where not eligible; its calibration factor; the score
        without the answer-kind boost, None when that boost left every score as it was): the
        views fused with the route's weights, times subject and time compatibility, the
        question-turn prior and the answer-label boosts."""
        cfg, off = self.config, self.off
        w_graph, w_hier = plan.weights()
        if not cfg.use_graph or "graph_view" in off:
            w_graph, w_hier = 0.0, 1.0
        if not cfg.use_hierarchy:
            w_graph, w_hier = 1.0, 0.0
        # Entity mentions are missing for some turns (PPR over them would be skewed), or the
        # scope is too small for the graph to tell turns apart (SMALL_SCOPE_TURNS).
        if skip_graph:
            w_graph, w_hier = 0.0, 1.0
        fused = fuse({"graph": views.graph, "hierarchy": views.hierarchy}, {"graph": w_graph, "hierarchy": w_hier})
        compat = np.ones(prep.n_turns)
        if cfg.use_calibration:
            # A question about two participants ("What do Joanna and Nate share?") has no
            # single subject whose turns should lead.
            subject = profile.subject if len(profile.mentioned_speakers) < 2 else None
            if "subject_compat" not in off:
                compat = prep.subject_compat(subject)
            if "time_cues" not in off:
                compat = compat * time_compat(prep.turn_dates, profile.temporal_cues, views.nodes)
        # A turn that asks rather than states is rarely evidence (DMF's query_like signal): on
        # the shared LoCoMo conversations 13 % of turns ending in "?" are cited, 29 % of others.
        asking = cfg.question_turn_prior if "question_turn_prior" not in off else 1.0
        score = fused * compat * np.where(prep.question_like, asking, 1.0)
        if prior is not None:
            score = score * prior
        if profile.aggregation and profile.answer_labels and "answer_labels" not in off:
            # "Which cities has Omar visited?": the turns that name a city are the candidates.
            score = score * np.where(prep.turns_with_labels(profile.answer_labels), 1 + ANSWER_LABEL_BOOST, 1.0)
        unboosted = None
        if profile.answer_kind_labels and ANSWER_KIND_BOOST and "answer_kind" not in off:  # none for lists
            # "When did Jon move?", "Where did they meet?": a turn that says when, or names a
            # place, can answer it; a turn on the same topic that does not rarely can.
            kind = prep.turns_with_labels(profile.answer_kind_labels)
            if kind.any():
                unboosted = np.where(eligible, _settle(score), -1.0)
                score = score * np.where(kind, 1 + ANSWER_KIND_BOOST, 1.0)
        return np.where(eligible, _settle(score), -1.0), compat, unboosted

    def _candidates(self, prep: PreparedScope, score: np.ndarray, eligible: np.ndarray, budget: int,
                    prior: np.ndarray | None, weights: dict[str, float],
                    hops: bool = False) -> dict[int, tuple[float, str]]:
        """turn → (score, reason): the top-K primary turns, their closure (replies, context
        turns, title hops, subject hops when ``hops``, graph bridges when enabled) and the next
        best by score."""
        cfg, off = self.config, self.off
        neighbours = cfg.closure_neighbours if "reply_closure" not in off else 0
        primary = [int(i) for i in top_indices(score, min(cfg.top_k_primary, budget)) if score[i] > 0]
        chosen: dict[int, tuple[float, str]] = {i: (float(score[i]), "primary") for i in primary}
        if cfg.use_closure and primary:
            extra = closure_candidates(
                primary, np.maximum(score, 0), session=prep.hier.turn_session,
                question_like=prep.question_like, unit_entities=prep.graph.unit_entities,
                entity_df=prep.graph.entity_df, turns_of_entities=prep.graph.turns_of_entities,
                next_turn=prep.hier.next_turn.view(), prev_turn=prep.hier.prev_turn.view(),
                n_live=prep.n_live, neighbours=neighbours,
                bridges=cfg.closure_graph_bridges,
                titled_turns=prep.titled_turns if "title_hops" not in off else None,
                relevance=normalize_live(np.maximum(score, 0), prep.index.turns.live()),
                prior=prior, linking=prep.named_entities, name=lambda node: prep.trace(node).id,
                residual=_residual_match(weights, prep),
                link=_subject_link(weights, prep) if hops else None,
                hop_targets=[int(i) for i in top_indices(score, 3 * budget) if eligible[i]] if hops else (),
                # Who speaks to whom: only where two or more people write (one-speaker notes
                # have no replies to find past a burst).
                speaker=prep.turn_speaker if neighbours == 1 and len(prep.speakers) > 1
                and "burst_closure" not in off else None)
            for node, (value, reason) in extra.items():
                if eligible[node]:
                    chosen[node] = (value, reason)
        for i in top_indices(score, 3 * budget + len(chosen)):
            if score[i] > 0 and int(i) not in chosen:
                chosen[int(i)] = (float(score[i]), "ranked")
        return chosen

    def _selection(self, prep: PreparedScope, query: Query, weights: dict[str, float],
                   chosen: dict[int, tuple[float, str]], budget: int, as_of: dt.datetime | None,
                   eligible: np.ndarray) -> tuple[list[tuple[int, tuple[float, str]]], dict[int, int]]:
        """(at most ``budget`` turns in evidence order, superseded turn → its successor): chosen
        by score, query-term coverage and session diversity, then the newest state first. In a
        chat of short messages a turn rarely holds more than one of the question's terms, and a
        coverage bonus lifts one-word replies that repeat a rare term ("Hiking?") over the turns
        that answer: there the selection is by score and diversity alone
        (``_chat_of_short_messages``, D-068)."""
        cfg, off = self.config, self.off
        ranked = select_evidence(
            chosen, prep.hier.turn_session, budget,
            diversity=min(AGGREGATE_DIVERSITY, cfg.session_diversity)
            if query.profile.aggregation and "aggregation" not in off else cfg.session_diversity,
            coverage_gain=0.0 if "coverage_gain" in off or _chat_of_short_messages(prep) else cfg.coverage_gain,
            turn_terms=prep.turn_terms, query_weights=weights)
        # As of a time, the state is the newest assertion visible then, not the newest today.
        superseded = prep.superseded_by if as_of is None else prep.superseded_within(
            (prep.turn_time <= as_of.isoformat()) & prep.alive)
        if cfg.use_calibration and "supersession_order" not in off:
            ranked = newest_state_first(with_current_states(ranked, superseded, eligible, budget), superseded)
        return ranked, superseded

    def _evidence(self, prep: PreparedScope, node: int, score: float, reason: str,
                  superseded: dict[int, int], why: dict[str, Any]) -> Evidence:
        trace = prep.trace(node)
        provenance = Provenance(trace.id, trace.session, trace.speaker,
                                trace.event_time or trace.session_time, trace.source_id, trace.seq)
        notes = tuple(f"{s.surface} = {s.label()}" for s in prep.annotations.get(node, []))
        newer = superseded.get(node)
        return Evidence(trace_id=trace.id, text=trace.text, score=round(score, 6), provenance=provenance,
                        why={"reason": reason, **why},
                        annotations=notes,
                        superseded_by=prep.trace(newer).id if newer is not None else None)


def _role_prior(prep: PreparedScope, profile: QueryProfile) -> np.ndarray | None:
    """Per-turn factor for who wrote the turn: a question about the asker ("What did I…")
    prefers the turns written in the role "user"; other questions have no preference."""
    if not profile.about_asker:
        return None
    return np.where(prep.by_user, 1.0, 1 - ASKER_ROLE_PENALTY)


def _chat_of_short_messages(prep: PreparedScope) -> bool:
    """Whether selection leaves out the coverage bonus: a memory of short messages
    (``PreparedScope.short_messages``) past a small scope. In a small one (a few messages) every
    turn is a candidate anyway, and the query terms a turn covers are what tells the few apart,
    as the speakers' names are kept in its query embedding (``query_reading.embedded``)."""
    return prep.short_messages and not prep.small


def _settle(scores: np.ndarray) -> np.ndarray:
    """Scores rounded to 1e-12: the graph's base + delta adds the same terms in another order
    than a freshly built graph, which moves a score by ~1e-16; rounding makes such near-ties
    exact ties, which are broken by slot (= trace id) order as in a fresh build."""
    return np.round(scores, 12)


@dataclass(frozen=True, slots=True)
class _Clock:
    """When a search started, finished reading the query and finished encoding it."""

    start: float
    read: float
    encoded: float

    def timings(self) -> dict[str, float]:
        """Milliseconds: ``encode_ms`` the query embedding, ``total_ms`` the whole search so far,
        ``retrieve_ms`` the rest (reading the query included)."""
        end = time.perf_counter()
        encode = self.encoded - self.read
        return {"encode_ms": encode * 1000, "total_ms": (end - self.start) * 1000,
                "retrieve_ms": (end - self.start - encode) * 1000}


def _eligible(prep: PreparedScope, session: str | None, as_of: dt.datetime | None,
              allowed_rowids: set[int] | None, hidden_rowids: Collection[int] = ()) -> np.ndarray:
    mask = np.ones(prep.n_turns, dtype=bool)
    if session is not None:
        mask &= prep.turn_session_name == session
    if as_of is not None:
        mask &= prep.turn_time <= as_of.isoformat()
    if allowed_rowids is not None:
        mask &= np.isin(prep.turn_rowid, np.fromiter(allowed_rowids, dtype=np.int64))
    if hidden_rowids:
        mask &= ~np.isin(prep.turn_rowid, np.fromiter(hidden_rowids, dtype=np.int64))
    return mask


def _title_match(query: str, prep: PreparedScope) -> np.ndarray:
    """For turns whose title the query contains as words, how fully it names them."""
    out = np.zeros(prep.n_turns)
    titles = prep.titles
    if not titles:
        return out
    words = normalize_title(query).split()
    padded = f" {' '.join(words)} "
    strength = prep.title_strength
    written = prep.title_written
    # The titles the query names are among its word n-grams: looked up, not scanned for.
    named = {gram for n in range(1, min(prep.title_words, len(words)) + 1)
             for i in range(len(words) - n + 1) if (gram := " ".join(words[i:i + n])) in titles}
    # A writer who capitalizes names but writes a title's words in lower case ("what science
    # fantasy series…" against the page "Science Fantasy") is using them as common words.
    capitalizes = any(word[:1].isupper() for word in query.split()[1:])
    for key in _outermost(padded, sorted(named)):
        form = written[key]
        common = capitalizes and form != form.lower() and form not in query
        value = strength[key] * (LOWERCASE_TITLE_MATCH if common else 1.0)
        out[titles[key]] = np.maximum(out[titles[key]], value)
    return out


def _residual_match(weights: dict[str, float], prep: PreparedScope) -> Callable[[int, int], float]:
    """residual(source, target): the idf-weighted share of the query terms missing from turn
    ``source`` that turn ``target`` contains (0 when ``source`` has them all)."""
    def residual(source: int, target: int) -> float:
        have, got = prep.turn_terms[source], prep.turn_terms[target]
        left = [(term, weight) for term, weight in weights.items() if term not in have]
        total = sum(weight for _, weight in left)
        return sum(weight for term, weight in left if term in got) / total if total else 0.0
    return residual


def _subject_link(weights: dict[str, float], prep: PreparedScope) -> Callable[[int, int], float]:
    """link(source, target): the idf-weighted share of the words of turn ``source`` that the
    query does not use (what ``source`` says the query's subject is) that ``target`` repeats."""
    beyond: dict[int, tuple[dict[str, float], float]] = {}

    def link(source: int, target: int) -> float:
        if source not in beyond:
            idf = query_term_weights(sorted(prep.turn_terms[source]), prep.term_df, prep.n_live)
            own = {term: weight for term, weight in idf.items() if term not in weights}
            beyond[source] = own, sum(own.values())
        own, total = beyond[source]
        shared = sorted(own.keys() & prep.turn_terms[target])  # summed in one order: same float
        return sum(own[term] for term in shared) / total if total else 0.0
    return link


def _outermost(padded: str, keys: list[str]) -> list[str]:
    """The keys with an occurrence in ``padded`` that no longer key's occurrence covers: a
    query naming "Figure 2 Ranch Airport" names that page, not the pages "Airport" and "2"."""
    spans = {key: _occurrences(padded, f" {key} ") for key in keys}
    longest_first = sorted(keys, key=len, reverse=True)
    kept = []
    for key in keys:
        covers = [span for other in longest_first if len(other) > len(key) for span in spans[other]]
        if any(not any(a <= s and e <= b for a, b in covers) for s, e in spans[key]):
            kept.append(key)
    return kept


def _occurrences(text: str, needle: str) -> list[tuple[int, int]]:
    found, start = [], text.find(needle)
    while start >= 0:
        found.append((start, start + len(needle)))
        start = text.find(needle, start + 1)
    return found


def _lexical_refinement(terms: Sequence[str], lowered_texts: list[str], nodes: np.ndarray) -> np.ndarray:
    """Share of the query's hard terms (``Query.hard_terms``: quoted phrases, numbers, names)
    found verbatim in a turn."""
    out = np.zeros(len(lowered_texts))
    if not terms:
        return out
    nodes = np.asarray(nodes, dtype=np.int64)
    hits = [sum(t in lowered_texts[i] for t in terms) for i in nodes.tolist()]
    out[nodes] = np.asarray(hits, dtype=np.float64) / len(terms)
    return out
