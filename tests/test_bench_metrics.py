"""The benchmark's metric functions against hand-computed cases, plus their properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zeromem_bench import metrics

VALID = frozenset({"D1:1", "D1:2", "D8:6", "D9:17", "D11:26", "D3:5"})


def test_repair_splits_a_list_of_ids_into_two_gold_turns():
    fixed = metrics.repair_evidence_ids(["D8:6; D9:17"], VALID)
    assert fixed.ids == ("D8:6", "D9:17")
    assert (fixed.repaired, fixed.dropped) == (2, 0)


def test_repair_rewrites_extra_colon_and_leading_zeros():
    assert metrics.repair_evidence_ids(["D:11:26"], VALID).ids == ("D11:26",)
    assert metrics.repair_evidence_ids(["D 3:05"], VALID).ids == ("D3:5",)


def test_repair_drops_ids_missing_from_the_conversation_and_keeps_valid_ones_untouched():
    fixed = metrics.repair_evidence_ids(["D1:1", "D", "D10:19", "D1:1"], VALID)
    assert fixed.ids == ("D1:1",)
    assert (fixed.repaired, fixed.dropped) == (0, 2)


def test_flatten_expands_multi_turn_evidence_in_order_dedupes_and_caps():
    groups = [["D1:2"], ["D1:1", "D1:2", "D3:5"], ["D9:17"], ["D8:6"]]
    assert metrics.flatten_turns(groups, 3) == ["D1:2", "D1:1", "D3:5"]
    assert metrics.flatten_turns(groups, 10) == ["D1:2", "D1:1", "D3:5", "D9:17", "D8:6"]


def test_recall_all_hit_on_a_hand_computed_ranking():
    gold = ["a", "b", "c"]
    ranked = ["x", "a", "y", "c", "b"]
    assert metrics.recall_at_k(gold, ranked, 1) == 0
    assert metrics.recall_at_k(gold, ranked, 2) == pytest.approx(1 / 3)
    assert metrics.recall_at_k(gold, ranked, 4) == pytest.approx(2 / 3)
    assert metrics.all_at_k(gold, ranked, 4) is False
    assert metrics.all_at_k(gold, ranked, 5) is True
    assert metrics.hit_at_k(gold, ranked, 1) is False
    assert metrics.hit_at_k(gold, ranked, 2) is True


def test_recall_refuses_a_question_without_gold():
    with pytest.raises(ValueError, match="skip"):
        metrics.recall_at_k([], ["a"], 1)


def test_reciprocal_rank_is_one_over_first_gold_rank_and_zero_past_the_depth():
    assert metrics.reciprocal_rank(["c"], ["a", "b", "c"]) == pytest.approx(1 / 3)
    assert metrics.reciprocal_rank(["z"], ["a", "b"]) == 0.0
    assert metrics.reciprocal_rank(["c"], ["a", "b", "c"], depth=2) == 0.0


def test_normalize_answer_follows_locomo():
    assert metrics.normalize_answer("The Cat, and a Dog!") == "cat dog"
    assert metrics.normalize_answer(2022) == "2022"


def test_answer_in_context_needs_every_normalized_token():
    context = "[8 May 2023] Caroline: I went to the LGBTQ support group on 7 May, 2023."
    assert metrics.answer_in_context("7 May 2023", context)
    assert metrics.answer_in_context("the support group", context)
    assert not metrics.answer_in_context("8 June 2023", context)
    assert not metrics.answer_in_context("", context)


def test_token_f1_stems_before_matching():
    # "running shoes" vs "run shoe": stems match exactly.
    assert metrics.token_f1("running shoes", "run shoe") == pytest.approx(1.0)
    # 1 common token of 2 predicted and 3 gold: P=1/2, R=1/3, F1=0.4
    assert metrics.token_f1("blue car", "red bus car") == pytest.approx(0.4)
    assert metrics.token_f1("nothing", "else") == 0.0


def test_multi_hop_f1_averages_best_match_per_gold_part():
    # gold parts: "pottery" (matched fully), "camping" (not matched) → (1 + 0) / 2
    assert metrics.locomo_f1("pottery, painting", "pottery, camping", 1) == pytest.approx(0.5)


def test_open_domain_f1_keeps_gold_before_semicolon():
    assert metrics.locomo_f1("psychology", "psychology; counseling", 3) == pytest.approx(1.0)


def test_bleu1_clips_counts_and_penalizes_short_predictions():
    # prediction "cat cat": clipped 1 / 2 = 0.5; same length as gold → no penalty
    assert metrics.bleu1("cat cat", "cat mat") == pytest.approx(0.5)
    # prediction "cat" vs 2 gold tokens: precision 1, penalty exp(1 - 2/1)
    assert metrics.bleu1("cat", "cat mat") == pytest.approx(math.exp(-1))
    assert metrics.bleu1("", "cat") == 0.0


def test_abstention_phrases_match_locomo():
    assert metrics.abstains("No information available.")
    assert metrics.abstains("That was not mentioned")
    assert not metrics.abstains("Paris")


def test_percentile_interpolates_linearly():
    assert metrics.percentile([4, 1, 3, 2], 50) == pytest.approx(2.5)
    assert metrics.percentile([10, 20], 95) == pytest.approx(19.5)
    assert metrics.percentile([], 50) is None


def test_auroc_on_hand_computed_scores_with_a_tie():
    # positives 0.9, 0.5; negatives 0.5, 0.1 → pairs: (0.9>0.5) (0.9>0.1) (0.5=0.5 half) (0.5>0.1)
    assert metrics.auroc([0.9, 0.5, 0.5, 0.1], [True, True, False, False]) == pytest.approx(3.5 / 4)
    assert metrics.auroc([0.1, 0.2], [True, True]) is None


ids = st.lists(st.sampled_from("abcdefgh"), max_size=8)


@given(gold=st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=5), ranked=ids,
       k=st.integers(1, 10))
def test_recall_is_monotone_in_k_and_bounded(gold, ranked, k):
    low = metrics.recall_at_k(gold, ranked, k)
    high = metrics.recall_at_k(gold, ranked, k + 1)
    assert 0.0 <= low <= high <= 1.0
    assert metrics.hit_at_k(gold, ranked, k) == (low > 0)


@given(groups=st.lists(ids, max_size=6), k=st.integers(1, 10))
def test_flatten_never_exceeds_k_nor_repeats(groups, k):
    turns = metrics.flatten_turns(groups, k)
    assert len(turns) <= k
    assert len(turns) == len(set(turns))


@given(scores=st.lists(st.floats(0, 1), min_size=2, max_size=20), data=st.data())
def test_auroc_of_reversed_scores_is_its_complement(scores, data):
    labels = data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores)))
    area = metrics.auroc(scores, labels)
    flipped = metrics.auroc([-s for s in scores], labels)
    if area is None:
        assert flipped is None
    else:
        assert area + flipped == pytest.approx(1.0)
