"""Dialogue-signal rules (lifecycle/rules.py), English and Chinese, on sentences of our own."""

import pytest

from zeromem.lifecycle.rules import SIGNALS, dialogue_signals, is_ack

CASES = [
    # English
    ("Please never schedule calls before 9am.", {"constraint"}),
    ("I'm allergic to shellfish.", {"constraint"}),
    ("Our budget is 2,000 dollars, no more than $2500 in any case.", {"constraint"}),
    ("I prefer window seats on long flights.", {"preference"}),
    ("I really enjoy baking sourdough on Sundays.", {"preference"}),
    ("My favourite band is Radiohead.", {"preference"}),
    ("We're huge fans of board games.", {"preference"}),
    ("I'd rather take the train.", {"preference"}),
    ("I currently work as a nurse.", {"current_state"}),
    ("We live in a small flat near the river.", {"current_state"}),
    ("I used to smoke, back in college.", {"past_state"}),
    ("My old car was a red hatchback.", {"past_state"}),
    ("Actually, the party is on Saturday.", {"correction"}),
    ("Sorry, what I meant was the blue one.", {"correction"}),
    ("Let's take the bus instead of driving.", {"replacement"}),
    ("I switched to decaf.", {"replacement"}),
    ("I don't drink coffee anymore.", {"replacement"}),
    ("What time does the store open?", {"query_like"}),
    ("Could you send me the file", {"query_like"}),
    ("ok thanks!", {"ack_like"}),
    ("Got it.", {"ack_like"}),
    ("sounds good, cheers", {"ack_like"}),
    # reactions are not tastes
    ("Wow, love that painting!", set()),
    ("I love your turtles!", set()),
    ("The meeting went long and everyone was tired.", set()),
    # Chinese
    ("我不吃香菜，千万别放。", {"constraint"}),
    ("我对花生过敏。", {"constraint"}),
    ("我最喜欢的水果是芒果。", {"preference"}),
    ("我比较喜欢安静的咖啡馆。", {"preference"}),
    ("我现在住在杭州。", {"current_state"}),
    ("我以前在银行上班。", {"past_state"}),
    ("说错了，会议在周四。", {"correction"}),
    ("把咖啡换成茶吧。", {"replacement"}),
    ("你明天几点出发？", {"query_like"}),
    ("好的，谢谢！", {"ack_like"}),
    ("收到", {"ack_like"}),
    ("今天下雨了，路上很堵。", set()),
]


@pytest.mark.parametrize("text, expected", CASES)
def test_each_rule(text, expected):
    assert set(dialogue_signals(text)) == expected


def test_signals_combine():
    found = dialogue_signals("Actually, I now live in Denver instead of Boston.")
    assert found == {"correction", "current_state", "replacement"}
    assert set(found) <= set(SIGNALS)


def test_ack_is_short_and_made_of_ack_words_only():
    assert is_ack("thanks!! 🙂")
    assert not is_ack("thanks, I'll send the 3 reports tomorrow morning")
    assert not is_ack("ok 42")
    assert not is_ack("")
    assert not is_ack("好的，明天下午三点在公司门口等你")
