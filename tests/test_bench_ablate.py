"""``zeromem bench ablate``: the effect of each rule family, its noise and the verdict (exact on
made-up scores), and the command end to end on a tiny LoCoMo conversation."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from test_bench_locomo import _conversation
from zeromem.config import Config
from zeromem_bench import ablate
from zeromem_bench.cli import bench_app


def _scores(recall, all_gold, ranked=None) -> ablate._Scores:
    return ablate._Scores(list(recall), list(all_gold), ranked or [(str(i),) for i in range(len(recall))])


def test_the_effect_is_all_on_minus_off_and_its_noise_at_least_one_question() -> None:
    # one question of four lost without the family: +25 points, sd of (1, 0, 0, 0) = 0.5
    delta, noise = ablate._effect([1, 1, 0, 1], [0, 1, 0, 1])
    assert delta == pytest.approx(25.0)
    assert noise == pytest.approx(max(25.0, 2 * 100 * 0.5 / math.sqrt(4)))
    # nothing moved: no effect, and the noise is one question's worth
    assert ablate._effect([1, 0, 1, 0], [1, 0, 1, 0]) == (0.0, 25.0)


def test_a_family_pays_costs_or_does_nothing_on_a_data_set() -> None:
    n = 100
    on = _scores([1.0] * 60 + [0.0] * 40, [1.0] * 50 + [0.0] * 50)
    gains = _scores([0.0] * 10 + [1.0] * 50 + [0.0] * 40, [0.0] * 10 + [1.0] * 40 + [0.0] * 50,
                    [("x",)] * 10 + on.ranked[10:])  # 10 questions lost without it
    loses = _scores([1.0] * 60 + [1.0] * 10 + [0.0] * 30, [1.0] * 50 + [1.0] * 10 + [0.0] * 40,
                    on.ranked[:60] + [("y",)] * 10 + on.ranked[70:])
    idle = _scores(on.recall, on.all_gold, on.ranked)
    rows = ablate.compare({ablate.ALL_ON: on, "gains": gains, "loses": loses, "idle": idle})
    assert rows["gains"]["pays"] and not rows["gains"]["costs"] and rows["gains"]["changed"] == 10
    assert rows["gains"]["d_recall"] == 10.0 and rows["gains"]["n"] == n
    assert rows["loses"]["costs"] and not rows["loses"]["pays"] and rows["loses"]["d_all"] == -10.0
    assert not rows["idle"]["pays"] and not rows["idle"]["costs"] and rows["idle"]["changed"] == 0
    # one question's change is within noise: neither pays nor costs
    one = _scores([0.0, *on.recall[1:]], [0.0, *on.all_gold[1:]], [("z",), *on.ranked[1:]])
    row = ablate.compare({ablate.ALL_ON: on, "one": one})["one"]
    assert not row["pays"] and not row["costs"] and row["changed"] == 1


def test_the_verdict_keeps_a_family_that_pays_twice_and_costs_nowhere() -> None:
    pays = {"pays": True, "costs": False, "changed": 5}
    flat = {"pays": False, "costs": False, "changed": 3}
    costs = {"pays": False, "costs": True, "changed": 4}
    idle = {"pays": False, "costs": False, "changed": 0}
    assert ablate.verdict({"a": pays, "b": pays, "c": flat}) == ("keep", "pays on a, b")
    assert ablate.verdict({"a": pays, "b": pays, "c": costs}) == ("candidate", "costs more than noise on c")
    assert ablate.verdict({"a": pays, "b": flat}) == ("candidate", "pays on 1 data set (a)")
    assert ablate.verdict({"a": idle, "b": idle}) == ("candidate", "changes no evidence on these data sets")


def test_a_joined_variant_switches_its_families_off_together() -> None:
    config = ablate._config(Config(), "titles+coverage_gain")
    assert config.retrieval.disabled_rules == ("titles", "coverage_gain")
    assert ablate._config(Config(), ablate.ALL_ON).retrieval.disabled_rules == ()


def test_cli_ablate_on_a_tiny_conversation(tmp_path) -> None:
    data = tmp_path / "tiny.json"
    data.write_text(json.dumps(_conversation()), encoding="utf-8")
    folder, out, table = tmp_path / "memories", tmp_path / "ablate.json", tmp_path / "ablate.md"
    result = CliRunner().invoke(bench_app, [
        "ablate", "--data", f"locomo={data}", "--families",
        "subject_compat,question_turn_prior,subject_compat+question_turn_prior",
        "--memories", str(folder), "--json", str(out), "--markdown", str(table), "--no-progress"])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    block = document["datasets"]["locomo"]
    assert block["n"] == 4 and block["metrics"] == ["R@10", "all@10"]
    both = "subject_compat+question_turn_prior"
    assert set(block["effects"]) == {"subject_compat", "question_turn_prior", both}
    assert all(row["n"] == 4 and row["noise_recall"] >= 25.0 for row in block["effects"].values())
    assert set(document["verdicts"]) == {"subject_compat", "question_turn_prior", both}
    assert document["verdicts"]["subject_compat"]["origin"].startswith("D-008")
    assert document["verdicts"][both]["origin"] == "; ".join(
        document["verdicts"][name]["origin"] for name in both.split("+"))
    assert len(list(folder.glob("*.db"))) == 1  # ingested once, reopened for each variant
    assert "| `subject_compat` |" in table.read_text() and "| all on |" in result.output


def test_cli_ablate_refuses_what_it_does_not_know(tmp_path) -> None:
    runner = CliRunner()
    unknown = runner.invoke(bench_app, ["ablate", "--data", f"locomo={tmp_path}", "--families", "nope"])
    assert unknown.exit_code == 2 and "known: several_questions" in unknown.output
    joined = runner.invoke(bench_app, ["ablate", "--data", f"locomo={tmp_path}", "--families", "titles+nope"])
    assert joined.exit_code == 2 and "unknown rule family 'nope'" in joined.output
    unnamed = runner.invoke(bench_app, ["ablate", "--data", f"chats={tmp_path}"])
    assert unnamed.exit_code == 2 and "NAME one of locomo, realtalk" in unnamed.output
