"""The benchmark harness end to end on a tiny synthetic LoCoMo conversation (and HotpotQA).

Scripted systems (test-only fakes that return fixed rankings) pin the harness's bookkeeping
exactly; the real baselines and zeromem run through the CLI when their modules exist.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import ClassVar

import pytest
from typer.testing import CliRunner

from zeromem import Memory
from zeromem.errors import LLMForbidden
from zeromem.reader import ReaderAnswer, record_call
from zeromem.retrieval import calibrate
from zeromem_bench import hotpotqa, locomo
from zeromem_bench.cli import bench_app
from zeromem_bench.runner import QueryResult, run_benchmark, run_reader
from zeromem_bench.zeromem_system import ZeromemSystem

TURNS = [
    ("Ana", "I moved to Denver last week for my new job."),
    ("Ben", "Congrats! Denver is great. Did you bring your cat?"),
    ("Ana", "Yes, Miso came along. She hates the altitude."),
    ("Ben", "I started pottery classes on Monday."),
]
TURNS_2 = [
    ("Ana", "My sister Carla visited me in Denver."),
    ("Ben", "I finished my first pottery bowl!"),
    ("Ana", "Carla and I went hiking at Red Rocks."),
]
QA = [
    {"question": "Where did Ana move?", "answer": "Denver", "evidence": ["D1:1"], "category": 4},
    {"question": "What is Ana's cat called?", "answer": "Miso", "evidence": ["D:1:3"], "category": 4},
    {"question": "What did Ben do in pottery?", "answer": "pottery classes, bowl",
     "evidence": ["D1:4; D2:2"], "category": 1},
    {"question": "When did Ana move to Denver?", "answer": "May 2023",
     "evidence": ["D1:1", "D9:9"], "category": 2},
    {"question": "Who visited Ben in Denver?", "adversarial_answer": "Carla",
     "evidence": ["D2:1"], "category": 5},
    {"question": "What broke?", "answer": "nothing", "evidence": ["D"], "category": 4},
]


def _conversation() -> dict:
    def session(number: int, turns: list) -> list:
        return [{"speaker": s, "dia_id": f"D{number}:{i}", "text": t}
                for i, (s, t) in enumerate(turns, start=1)]
    conv = {"speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": session(1, TURNS),
            "session_2_date_time": "10:00 am on 20 May, 2023", "session_2": session(2, TURNS_2),
            "session_3_date_time": "9:00 am on 1 June, 2023", "qa": QA}
    conv["session_1"][2]["blip_caption"] = "a photo of a grey cat on a sofa"
    return conv


@pytest.fixture
def locomo_file(tmp_path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(_conversation()), encoding="utf-8")
    return path


class Scripted:
    """A fake system answering from a fixed table: question → evidence groups (turn ids)."""

    def __init__(self, name: str, script: dict, no_answer: dict | None = None,
                 calls_llm: bool = False) -> None:
        self.name, self.script, self.no_answer, self.calls_llm = name, script, no_answer, calls_llm
        self.released: list[str] = []

    def ingest(self, corpus, units):
        self.units = {u.key: u for u in units}
        return 10.0 * len(units)

    def query(self, corpus, question, k, asked_at=None):
        if self.calls_llm:
            record_call(10, 2)
        groups = self.script.get(question, [])
        texts = [" ".join(self.units[t].draft["text"] for t in g) for g in groups]
        score = None if self.no_answer is None else self.no_answer.get(question, 0.0)
        return QueryResult([list(g) for g in groups], texts, "\n".join(texts), 5.0, 2.0, score)

    def release(self, corpus):
        self.released.append(corpus)

    def close(self):
        pass


def test_loader_repairs_and_drops_evidence_ids_and_counts_them(locomo_file):
    data = locomo.load_locomo([locomo_file.parent])
    assert data.report()["turns"] == 7
    gold = {q.text: q.gold for q in data.corpora[0].queries}
    assert gold["What is Ana's cat called?"] == ("D1:3",)
    assert gold["What did Ben do in pottery?"] == ("D1:4", "D2:2")
    assert gold["When did Ana move to Denver?"] == ("D1:1",)
    assert data.evidence_repaired == 3 and data.evidence_dropped == 2
    assert data.questions_without_gold == 1  # "What broke?" is skipped, and counted
    unit = data.corpora[0].units[2]
    assert unit.text == ("[1:56 pm on 8 May, 2023] Ana: Yes, Miso came along. She hates the "
                         "altitude. [image: a photo of a grey cat on a sofa]")


def test_harness_scores_a_scripted_system_exactly(locomo_file):
    corpus = locomo.load_locomo([locomo_file]).corpora[0]
    script = {
        "Where did Ana move?": [["D1:2"], ["D1:1"]],                 # gold at rank 2
        "What is Ana's cat called?": [["D1:2", "D1:3", "D1:4"]],     # a window covering gold
        "What did Ben do in pottery?": [["D1:4"], ["D1:4"], ["D2:3"]],  # half the gold
        "When did Ana move to Denver?": [["D2:1"]],                  # miss
    }
    system = Scripted("scripted", script)
    [result] = run_benchmark([corpus], [system], 2, count_tokens=lambda t: len(t.split()),
                             progress=False)
    report = locomo.system_report(result, 2)
    overall = report["overall"]
    assert overall["n"] == 4  # categories 1–4 with gold; adversarial and gold-less left out
    assert overall["recall@1"] == pytest.approx(100 * (0 + 0 + 0.5 + 0) / 4)
    assert overall["recall@2"] == pytest.approx(100 * (1 + 1 + 0.5 + 0) / 4)
    assert overall["all@2"] == pytest.approx(50.0)
    assert overall["hit@2"] == pytest.approx(75.0)
    assert overall["mrr"] == pytest.approx((1 / 2 + 1 / 2 + 1 + 0) / 4)
    assert overall["latency_ms_p50"] == 5.0 and overall["latency_ms_p50_no_encode"] == 3.0
    assert overall["ingest_ms_per_turn"] == pytest.approx(10.0)
    assert (overall["llm_calls"], overall["llm_tokens"]) == (0, 0)
    assert report["by_category"]["multi-hop"]["n"] == 1
    assert report["by_category"]["open-domain"]["n"] == 0
    assert report["by_category"]["open-domain"]["recall@2"] is None
    assert set(report["by_conversation"]) == {corpus.name}
    assert report["by_conversation"][corpus.name]["recall@2"] == overall["recall@2"]
    assert report["adversarial"] == {"n": 1, "no_answer_auroc": "n/a", "no_answer_accuracy": "n/a"}
    assert overall["answer_in_context"] == pytest.approx(50.0)  # Denver and Miso are in context
    assert system.released == [corpus.name]


def test_no_answer_score_is_scored_by_auroc_when_exposed(locomo_file):
    corpus = locomo.load_locomo([locomo_file]).corpora[0]
    scores = {"Who visited Ben in Denver?": 0.9, "Where did Ana move?": 0.1,
              "What is Ana's cat called?": 0.95}
    [result] = run_benchmark([corpus], [Scripted("s", {}, no_answer=scores)], 5,
                             count_tokens=len, progress=False)
    adversarial = locomo.system_report(result, 5)["adversarial"]
    assert adversarial["no_answer_auroc"] == pytest.approx(100 * 3 / 4)
    assert adversarial["no_answer_accuracy"] == pytest.approx(100 * 4 / 5)
    # Flagged at 0.5 (no threshold declared): 0.9 (adversarial) and 0.95 (answerable).
    assert adversarial["no_answer_precision"] == pytest.approx(50.0)
    assert adversarial["no_answer_recall"] == pytest.approx(100.0)


def test_no_answer_accuracy_is_read_at_the_threshold_the_system_declares(locomo_file):
    corpus = locomo.load_locomo([locomo_file]).corpora[0]
    scores = {"Who visited Ben in Denver?": 0.9, "Where did Ana move?": 0.6}

    class Declares(Scripted):
        def no_answer_threshold(self):
            return 0.7

    [result] = run_benchmark([corpus], [Declares("s", {}, no_answer=scores)], 5,
                             count_tokens=len, progress=False)
    adversarial = locomo.system_report(result, 5)["adversarial"]
    # At 0.7 only the adversarial question is flagged: all 5 right (at 0.5, 4 of 5).
    assert adversarial["no_answer_threshold"] == 0.7
    assert adversarial["no_answer_accuracy"] == pytest.approx(100.0)
    assert adversarial["no_answer_precision"] == adversarial["no_answer_recall"] == pytest.approx(100.0)


def test_zeromem_declares_the_engines_no_answer_threshold():
    system = ZeromemSystem()
    try:
        assert system.no_answer_threshold() == calibrate.NO_ANSWER_THRESHOLD
    finally:
        system.close()


def test_a_memory_operation_that_calls_an_llm_fails_the_run(locomo_file):
    corpus = locomo.load_locomo([locomo_file]).corpora[0]
    with pytest.raises(LLMForbidden, match="zero"):
        run_benchmark([corpus], [Scripted("cheater", {}, calls_llm=True)], 5, count_tokens=len,
                      progress=False)


def test_reader_answers_are_scored_with_locomo_f1_and_counted_apart(locomo_file):
    class EchoGold:
        model = "echo"
        answers: ClassVar[dict[str, str]] = {q["question"]: str(q.get("answer", "No information available"))
                                             for q in QA}

        def answer(self, question, context):
            record_call(7, 1)
            return ReaderAnswer(self.answers[question], 7, 1, self.model)

    corpus = locomo.load_locomo([locomo_file]).corpora[0]
    results = run_benchmark([corpus], [Scripted("s", {})], 5, count_tokens=len, progress=False)
    run_reader(results, EchoGold(), progress=False)
    reader = locomo.system_report(results[0], 5, "echo")["reader"]
    assert reader["f1"] == pytest.approx(100.0) and reader["bleu1"] == pytest.approx(100.0)
    assert reader["calls"] == 6 and reader["prompt_tokens"] == 42
    assert reader["adversarial_abstained"] == pytest.approx(100.0)
    assert locomo.system_report(results[0], 5)["overall"]["llm_calls"] == 0


def test_hotpotqa_pools_paragraphs_and_scores_sentences_inside_returned_text(tmp_path):
    items = [
        {"question": "Which city is Ana's employer in?", "answer": "Denver", "type": "bridge",
         "supporting_facts": {"title": ["Ana", "Acme"], "sent_id": [1, 0]},
         "context": {"title": ["Ana", "Acme"],
                     "sentences": [["Ana is a painter.", " She works at Acme."],
                                   ["Acme is a firm in Denver.", " It sells paint."]]}},
        {"question": "Is Acme older than Zed?", "answer": "yes", "type": "comparison",
         "supporting_facts": [["Acme", 1], ["Zed", 0], ["Zed", 7]],
         "context": [["Acme", ["Acme is a firm in Denver.", " It sells paint."]],
                     ["Zed", ["Zed was founded in 1990."]]]},
    ]
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    data = hotpotqa.load_hotpotqa(path)
    assert [u.key for u in data.corpus.units] == ["Ana", "Acme", "Zed"]  # Acme stored once
    assert data.supporting_facts_dropped == 1
    assert data.corpus.units[1].draft["text"] == "Acme: Acme is a firm in Denver. It sells paint."
    system = Scripted("s", {"Which city is Ana's employer in?": [["Acme"], ["Ana"]],
                            "Is Acme older than Zed?": [["Zed"]]})
    [result] = run_benchmark([data.corpus], [system], 2, count_tokens=len, progress=False)
    report = hotpotqa.system_report(result, 2)
    overall = report["overall"]
    assert overall["recall@2"] == pytest.approx(100 * (1 + 0.5) / 2)
    assert overall["all@2"] == pytest.approx(50.0)
    assert overall["sentence_recall@2"] == pytest.approx(100 * (1 + 0.5) / 2)
    assert set(report["by_category"]) == {"bridge", "comparison"}


_BASELINES_READY = all(importlib.util.find_spec(m) is not None for m in
                       ("zeromem.encoders.tokenize", "zeromem.indexes.lexical"))


@pytest.mark.skipif(not _BASELINES_READY, reason="the BM25 tokenizer/index are not built yet")
def test_cli_locomo_with_bm25_writes_the_issue_json_shape(locomo_file, tmp_path):
    systems = "bm25,zeromem" if hasattr(Memory, "search") else "bm25"
    out, png = tmp_path / "out.json", tmp_path / "out.png"
    result = CliRunner().invoke(bench_app, ["locomo", "--data", str(locomo_file), "--k", "5",
                                            "--systems", systems, "--json", str(out),
                                            "--plot", str(png), "--no-progress"])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    assert document["benchmark"] == "locomo" and document["k"] == 5
    overall = document["systems"]["bm25"]["overall"]
    for key in ("n", "recall@1", "recall@5", "recall@10", "recall@20", "all@5", "hit@5", "mrr",
                "answer_in_context", "context_tokens", "latency_ms_p50", "latency_ms_p95",
                "latency_ms_p50_no_encode", "ingest_ms_per_turn", "llm_calls", "llm_tokens"):
        assert key in overall
    assert overall["llm_calls"] == 0 and overall["n"] == 4
    assert overall["recall@20"] == pytest.approx(100.0)  # 7 turns: everything is returned
    assert set(document["systems"]["bm25"]["by_category"]) == {
        "multi-hop", "temporal", "open-domain", "single-hop"}
    assert document["data"]["evidence_dropped"] == 2
    assert document["context_tokenizer"] and document["versions"]["python"]
    assert png.stat().st_size > 0
    assert "single-hop (" in result.output and "open-domain (0)" not in result.output  # no empty columns
    assert "bm25" in result.output


def test_cli_memories_are_kept_and_a_rerun_reopens_them_with_the_same_results(locomo_file, tmp_path):
    folder = tmp_path / "memories"
    documents = []
    for run in range(2):
        out = tmp_path / f"run{run}.json"
        result = CliRunner().invoke(bench_app, ["locomo", "--data", str(locomo_file), "--k", "5",
                                                "--systems", "zeromem", "--memories", str(folder),
                                                "--json", str(out), "--no-progress"])
        assert result.exit_code == 0, result.output
        documents.append(json.loads(out.read_text()))
        assert len(list(folder.glob("*.db"))) == 1  # one conversation, kept once
    built, reopened = (d["systems"]["zeromem"]["overall"] for d in documents)
    assert built["reopened_memories"] == 0 and built["ingest_ms_per_turn"] > 0
    # the second run searched the kept memory: same evidence, and no ingest to report
    assert reopened["reopened_memories"] == 1 and reopened["ingest_ms_per_turn"] is None
    for key in ("recall@5", "all@5", "mrr", "answer_in_context", "context_tokens"):
        assert reopened[key] == built[key]
    assert documents[1]["config"]["memories"] == str(folder)
    assert any("reopened" in note for note in documents[1]["notes"])
    assert not any("reopened" in note for note in documents[0]["notes"])
    # other data (one turn edited) is never taken for the kept memory
    conv = _conversation()
    conv["session_2"][1]["text"] = "I finished my second pottery bowl!"
    edited = tmp_path / "edited" / "tiny.json"
    edited.parent.mkdir()
    edited.write_text(json.dumps(conv), encoding="utf-8")
    result = CliRunner().invoke(bench_app, ["locomo", "--data", str(edited), "--systems", "zeromem",
                                            "--memories", str(folder), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert len(list(folder.glob("*.db"))) == 2


def test_cli_reports_bad_input_without_a_traceback(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(bench_app, ["locomo", "--data", str(tmp_path / "nope.json"),
                                        "--systems", "bm25", "--no-progress"])
    assert missing.exit_code == 2 and "error:" in missing.output
    unknown = runner.invoke(bench_app, ["locomo", "--data", str(tmp_path), "--systems", "bm99"])
    assert unknown.exit_code == 2 and "error:" in unknown.output
    reader = runner.invoke(bench_app, ["hotpotqa", "--data", str(tmp_path / "x.json"),
                                       "--reader", "openai"])
    assert reader.exit_code == 2 and "--base-url" in reader.output


def test_original_locomo10_layout_is_read_with_sample_ids(tmp_path):
    path = tmp_path / "locomo10.json"
    conv = _conversation()
    qa = conv.pop("qa")
    path.write_text(json.dumps([{"sample_id": "conv-1", "conversation": conv, "qa": qa},
                                {"sample_id": "conv-2", "conversation": conv, "qa": qa[:2]}]))
    data = locomo.load_locomo([path])
    assert [c.name for c in data.corpora] == ["conv-1", "conv-2"]
    assert [len(c.queries) for c in data.corpora] == [6, 2]


@pytest.mark.skipif(not _BASELINES_READY, reason="the BM25 tokenizer/index are not built yet")
def test_cli_reader_scores_answers_and_reports_its_tokens_apart(locomo_file, tmp_path):
    from test_reader import _completion, _Server

    server = _Server()
    server.default = (200, _completion("Denver", prompt=30, completion=2))
    out = tmp_path / "out.json"
    try:
        result = CliRunner().invoke(bench_app, [
            "locomo", "--data", str(locomo_file), "--k", "5", "--systems", "bm25",
            "--reader", "openai", "--base-url", server.url, "--model", "tiny",
            "--json", str(out), "--no-progress"])
    finally:
        server.close()
    assert result.exit_code == 0, result.output
    system = json.loads(out.read_text())["systems"]["bm25"]
    reader = system["reader"]
    assert reader["calls"] == len(QA) and reader["prompt_tokens"] == 30 * len(QA)
    assert reader["f1"] == pytest.approx(100 * 1 / 4)  # only "Where did Ana move?" is Denver
    assert system["overall"]["llm_calls"] == 0 and system["overall"]["llm_tokens"] == 0
    assert len(server.requests) == len(QA)
