"""The no-answer model's refit (bench/no_answer_fit.py): the fit, its threshold, its out-of-sample report."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from zeromem.retrieval import calibrate
from zeromem.retrieval.calibrate import NoAnswerInputs, no_answer_score
from zeromem_bench import no_answer_fit
from zeromem_bench.no_answer_fit import INPUTS, Rows, evaluate, fit, scores, shipped_params, threshold


def _rows(n: int = 400, seed: int = 3, true: np.ndarray | None = None) -> Rows:
    """Rows drawn from a known logistic model over the inputs, two benchmarks, four groups."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, len(INPUTS)))
    true = np.array([0.5, *np.linspace(-3, 3, len(INPUTS))]) if true is None else true
    label = (rng.random(n) < 1 / (1 + np.exp(-(true[0] + x @ true[1:])))).astype(np.int8)
    benchmark = np.array(["a" if i % 4 < 3 else "b" for i in range(n)])
    group = np.array([f"{b}:{(i // 4) % 2}" for i, b in enumerate(benchmark)])
    return Rows(x, label, benchmark, group, np.array([f"q{i}" for i in range(n)]))


def test_the_fit_recovers_a_known_model_and_is_the_same_every_time():
    true = np.array([0.5, *np.linspace(-3, 3, len(INPUTS))])
    rows = _rows(20_000, true=true)
    params = fit(rows, l2=0.0)
    assert np.allclose(params, true, atol=0.25)
    assert np.array_equal(params, fit(rows, l2=0.0))


def test_l2_shrinks_the_weights_but_not_the_bias():
    rows = _rows()
    loose, tight = fit(rows, l2=0.0), fit(rows, l2=50.0)
    assert np.abs(tight[1:]).sum() < np.abs(loose[1:]).sum() / 2


def test_the_threshold_is_the_lowest_cut_with_the_asked_precision():
    score = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
    label = np.array([0, 0, 1, 0, 1, 1, 1, 1, 1, 1])
    assert threshold(score, label, 0.9) == 0.5  # 0.4 would flag a negative: 6 / 7
    assert threshold(score, label, 0.8) == 0.3  # 7 / 8 ≥ 0.8
    assert threshold(score, np.zeros(10, dtype=int), 0.9) == 1.0  # never precise enough: flag nothing


def test_the_shipped_parameters_score_as_the_engine_does():
    inputs = NoAnswerInputs(keyword_coverage=0.5, term_coverage=0.25, unseen_terms=0.1, top_cosine=0.6,
                            names_missing=0.5, off_subject=1 / 3)
    row = Rows(np.array([[getattr(inputs, f) for f in INPUTS]]), np.zeros(1, dtype=np.int8),
               np.array(["a"]), np.array(["a:0"]), np.array(["q"]))
    assert scores(shipped_params(), row)[0] == pytest.approx(no_answer_score(inputs), abs=1e-6)
    assert tuple(f.name for f in dataclasses.fields(NoAnswerInputs)) == INPUTS
    assert shipped_params()[0] == calibrate.NA_BIAS


def test_the_report_scores_every_row_by_a_model_that_never_saw_its_group():
    rows = _rows()
    report = evaluate(rows)
    assert set(report["auroc"]) == {"a", "b"}
    for block in report["auroc"].values():
        assert 50 < block["leave_one_group_out"] <= 100
        assert 50 < block["leave_one_benchmark_out"] <= 100
        assert len(block["groups"]) == 2
    # Moving the labels of group a:0 changes no left-out score inside a:0 (its model never saw them).
    flipped = dataclasses.replace(rows, label=np.where(rows.group == "a:0", 1 - rows.label, rows.label))
    again = evaluate(flipped)
    assert again["auroc"]["a"]["groups"]["a:0"]["left_out"] == pytest.approx(
        100 - report["auroc"]["a"]["groups"]["a:0"]["left_out"], abs=0.11)
    model = report["model"]
    assert set(model) == {"NA_BIAS", "NO_ANSWER_THRESHOLD", *no_answer_fit.SHIPPED_NAMES.values()}
    assert all(round(v, 3) == v for v in model.values())
    assert report["reproduces_shipped"] is False


def test_the_report_says_when_the_shipped_constants_are_the_fit(monkeypatch):
    rows = _rows()
    model = evaluate(rows)["model"]
    for name, value in model.items():
        monkeypatch.setattr(calibrate, name, value)
    assert evaluate(rows)["reproduces_shipped"] is True


def test_rows_round_trip_and_refuse_other_inputs(tmp_path, monkeypatch):
    rows = _rows(20)
    path = tmp_path / "rows.npz"
    rows.save(path)
    back = Rows.load(path)
    assert all(np.array_equal(getattr(back, f.name), getattr(rows, f.name)) for f in dataclasses.fields(Rows))
    monkeypatch.setattr(no_answer_fit, "INPUTS", (*INPUTS, "something_new"))
    with pytest.raises(ValueError, match="other no-answer inputs"):
        Rows.load(path)


def test_a_search_carries_the_inputs_its_score_was_read_off(tmp_path):
    from zeromem import Memory

    with Memory(tmp_path / "m.db", user="u") as mem:
        mem.add_many([{"text": t, "speaker": "Ann", "session": f"s{i}"} for i, t in enumerate(
            ["I adopted a cat named Miso.", "We hiked Pine Ridge on Sunday.", "Work was busy this week."])])
        result = mem.search_detailed("What is the name of Ann's cat?")
        inputs = result.explain.no_answer_inputs
        assert inputs is not None and result.no_answer_score == no_answer_score(inputs)
        assert all(0.0 <= getattr(inputs, f) <= 1.0 for f in INPUTS)
        assert not math.isnan(result.no_answer_score)


def test_a_subject_who_only_asked_about_it_raises_the_inputs_that_say_so(tmp_path):
    from zeromem import Memory
    from zeromem.retrieval.calibrate import addresses_listener

    turns = [("Jon", "Hey Gina! How's your store going?"), ("Gina", "The store is doing great, sales doubled!"),
             ("Jon", "I rehearsed with my dance crew all week."), ("Gina", "Nice, Jon!"),
             ("Jon", "Your store looks great, your customers will be so comfy."),
             ("Gina", "Thanks! I painted the walls myself.")]
    with Memory(tmp_path / "m.db", user="u") as mem:
        mem.add_many([{"text": t, "speaker": s, "session": "s1"} for s, t in turns])
        asked = mem.search_detailed("How is Jon's store doing?").explain.no_answer_inputs
        told = mem.search_detailed("How is Gina's store doing?").explain.no_answer_inputs
    assert asked is not None and told is not None
    assert asked.subject_asks > 0 and asked.subject_addresses > 0
    assert told.subject_asks == 0 and told.subject_addresses == 0
    assert addresses_listener("glad your son is okay") and addresses_listener("这是你的猫吗")
    assert not addresses_listener("i saw young people there")  # "your" as a word, not inside one


def test_words_the_subject_never_wrote_raise_subject_unsaid(tmp_path):
    """Jon asked about the store and never wrote "paint"; Gina did. The asker ("I") of an
    assistant's memory wrote "Smith", the assistant wrote "Johnson"."""
    from zeromem import Memory

    turns = [("Jon", "Hey Gina! How's your store going?"), ("Gina", "The store is doing great!"),
             ("Jon", "I rehearsed with my dance crew all week."), ("Gina", "I painted the walls myself.")]
    chat = [("user", "I see Dr. Smith every two weeks, quite often really."),
            ("assistant", "Dr. Johnson and Dr. Smith both take walk-ins.")]
    with Memory(tmp_path / "m.db", user="u") as mem:
        mem.add_many([{"text": t, "speaker": s, "session": "s1"} for s, t in turns])
        jon = mem.search_detailed("Who painted the walls of Jon's store?").explain.no_answer_inputs
        gina = mem.search_detailed("Who painted the walls of Gina's store?").explain.no_answer_inputs
        nobody = mem.search_detailed("Who painted the walls of the store?").explain.no_answer_inputs
        mem.add_many([{"text": t, "speaker": s, "role": s, "session": "c1"} for s, t in chat], user="v")
        johnson = mem.search_detailed("How often do I see Dr. Johnson?", user="v").explain.no_answer_inputs
        smith = mem.search_detailed("How often do I see Dr. Smith?", user="v").explain.no_answer_inputs
        assistant = mem.search_detailed("Which doctors did you say take walk-ins?", user="v").explain.no_answer_inputs
    assert jon is not None and gina is not None and nobody is not None
    assert 0 < jon.subject_unsaid < 1  # "store" he wrote; "painted", "walls" he did not
    assert gina.subject_unsaid == 0 and nobody.subject_unsaid == 0
    assert johnson is not None and smith is not None and assistant is not None
    assert 0 < johnson.subject_unsaid < 1 and smith.subject_unsaid == 0
    assert assistant.subject_unsaid == 0  # about what the assistant said: no asker's words to check


def test_subject_unsaid_reads_the_sessions_the_evidence_comes_from(tmp_path):
    """The asker wrote "Shinjuku" — in another conversation, about a film. Judged where the
    evidence about their apartment is, "Shinjuku" is a word they never said there."""
    from internals import retriever_of
    from zeromem import Memory
    from zeromem.encoders.tokenize import tokenize
    from zeromem.retrieval.no_answer import subject_unsaid
    from zeromem.retrieval.profile import build_profile
    from zeromem.retrieval.select import query_term_weights

    home = [("user", "I have lived in my apartment in Tokyo for three years now."),
            ("assistant", "Three years in one apartment is a long time!")]
    film = [("user", "We watched a documentary about Shinjuku nightlife yesterday."),
            ("assistant", "Shinjuku has some of the busiest streets in the world.")]
    with Memory(tmp_path / "m.db", user="v") as mem:
        mem.add_many([{"text": t, "speaker": r, "role": r, "session": "home"} for r, t in home]
                     + [{"text": t, "speaker": r, "role": r, "session": "film"} for r, t in film])
        prep = retriever_of(mem).prepared(mem.scope)
        names = [prep.hier.sessions[i] for i in prep.hier.turn_session[: len(prep.alive)].tolist()]
        at_home = [node for node, name in enumerate(names) if name == "home"]
        everywhere = list(range(len(names)))

        def unsaid(question: str, nodes: list[int]) -> float:
            tokens = tokenize(question)
            weights = query_term_weights(tokens, prep.term_df, prep.n_live)
            return subject_unsaid(prep, build_profile(question, prep.speakers), tokens, weights,
                                  tokenize, nodes)

        shinjuku = "How long have I lived in my apartment in Shinjuku?"
        tokyo = unsaid("How long have I lived in my apartment in Tokyo?", at_home)
        # "long" only the assistant wrote; "Shinjuku" the asker wrote, but not at home
        assert 0 < tokyo < unsaid(shinjuku, at_home)
        assert unsaid(shinjuku, everywhere) < unsaid(shinjuku, at_home)  # the film's session read too
        assert unsaid(shinjuku, []) == 0  # no evidence: nothing to read


def test_the_command_collects_fits_and_reproduces_from_its_cache(tmp_path):
    import gzip
    import json

    from typer.testing import CliRunner

    from test_bench_locomo import _conversation
    from test_bench_longmemeval import ITEMS
    from zeromem_bench.cli import bench_app

    data = tmp_path / "data"
    (data / "locomo").mkdir(parents=True)
    (data / "longmemeval").mkdir()
    (data / "locomo" / "tiny.json").write_text(json.dumps(_conversation()), encoding="utf-8")
    with gzip.open(data / "longmemeval" / "longmemeval_s_dev.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(ITEMS[::-1], handle)  # the abstention question first, then the answerable one
    args = ["fit-no-answer", "--data", str(data), "--cache", str(tmp_path / "cache"), "--no-progress"]
    first = CliRunner().invoke(bench_app, [*args, "--json", str(tmp_path / "a.json")])
    assert first.exit_code == 0, first.output
    report = json.loads((tmp_path / "a.json").read_text())
    # the tiny conversation: 1 adversarial question, 4 answerable ones with gold; LME: 1 + 1
    assert report["rows"] == {"locomo": {"questions": 5, "unanswerable": 1},
                              "longmemeval": {"questions": 2, "unanswerable": 1}}
    assert set(report["auroc"]["longmemeval"]["groups"]) == {"longmemeval:even", "longmemeval:odd"}
    assert "NO_ANSWER_THRESHOLD" in report["model"] and "dev numbers" in report["note"]
    assert sorted(p.name for p in (tmp_path / "cache").glob("*.npz")) == [
        "no-answer-locomo.npz", "no-answer-longmemeval.npz"]
    again = CliRunner().invoke(bench_app, [*args, "--json", str(tmp_path / "b.json")])
    assert again.exit_code == 0 and (tmp_path / "b.json").read_text() == (tmp_path / "a.json").read_text()
    wrong = CliRunner().invoke(bench_app, [*args, "--benchmarks", "hotpotqa"])
    assert wrong.exit_code == 2 and "unknown benchmark" in wrong.output
