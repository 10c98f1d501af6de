from zeromem.retrieval.answer_calibration import calibrate_answer
from zeromem.types import Evidence, Provenance


def _ev(tid, text, time="2023-05-08T13:56:00", notes=()):
    return Evidence(trace_id=tid, text=text, provenance=Provenance(tid, "s1", "Ana", time, None, 0),
                    score=1.0, annotations=notes)


def test_dates_are_normalized_and_relative_ones_resolved_against_evidence():
    ev = [_ev("t1", "I went to the support group yesterday")]
    out = calibrate_answer("yesterday", "When did Ana go to the support group?", ev)
    assert out.text == "7 May 2023"
    out = calibrate_answer("May 8, 2023", "When did Ana go?", ev)
    assert out.text == "8 May 2023"


def test_numbers_and_yes_no():
    ev = [_ev("t1", "I have three kids")]
    assert calibrate_answer("three", "How many kids does Ana have?", ev).text == "3"
    assert calibrate_answer("yeah, she does", "Does Ana have kids?", ev).text.startswith("Yes")


def test_grounding_and_list_trimming():
    ev = [_ev("t1", "I love pottery and hiking"), _ev("t2", "Camping is fun")]
    out = calibrate_answer("pottery, hiking, skydiving", "What activities does Ana enjoy?", ev)
    assert out.text == "pottery, hiking" and out.grounded
    assert set(out.support) == {"t1"}
    assert not calibrate_answer("skydiving", "What does Ana do?", ev).grounded
