"""Through the public API: subject hops (a question that defines what it asks about through
something else gets the turn that says it about the same subject, D-051) and a message that
asks two questions getting evidence for each (D-053)."""

import pytest

from zeromem import Memory
from zeromem.config import Config, EncoderConfig, RetrievalConfig

ENGLISH = ["My aunt Rosa has the email rosa.k@example.org.", "My cousin Tim works at a bakery.",
           "My aunt Rosa works at the city library.", "My boss Karen works at the downtown office.",
           "My neighbour Ali has the email ali@example.org.", "My uncle Ben works at a garage.",
           "My aunt Rosa likes gardening.", "My friend Joe works at a school."]
CHINESE = ["我将要参加城市骑行节。", "城市骑行节的持续时间是三天。", "城市骑行节的规模是两百人。",
           "湖畔读书会的地点是成都。", "星空音乐会的地点是重庆。", "城市骑行节的地点是西安。",
           "星空音乐会的持续时间是两天。", "湖畔读书会的规模是五十人。"]
CASES = [
    (ENGLISH, Config(), "Where does the person who has the email rosa.k@example.org work?", 2,
     {"My aunt Rosa has the email rosa.k@example.org.", "My aunt Rosa works at the city library."}),
    (CHINESE, Config(encoders=EncoderConfig(embedding_model="auto")), "那个持续时间是三天的活动，地点是什么？", 3,
     {"城市骑行节的持续时间是三天。", "城市骑行节的地点是西安。"}),
    (CHINESE, Config(encoders=EncoderConfig(embedding_model="auto")), "那个规模是五十人的活动，地点在哪里？", 3,
     {"湖畔读书会的规模是五十人。", "湖畔读书会的地点是成都。"}),
]


def _texts(tmp_path, texts, config, question, k, hops):
    config.retrieval = RetrievalConfig(closure_subject_hops=hops)
    with Memory(tmp_path / f"hops-{hops}.db", user="u", config=config) as mem:
        mem.add_many([{"text": t} for t in texts])
        evidence = mem.search(question, k=k)
    return [e.text for e in evidence], [e.why["reason"] for e in evidence]


@pytest.mark.parametrize("texts,config,question,k,gold", CASES)
def test_the_second_hop_shares_the_first_hops_subject(tmp_path, texts, config, question, k, gold):
    found, reasons = _texts(tmp_path, texts, config, question, k, hops=True)
    assert gold <= set(found)
    assert any(reason.startswith("shares a subject with") for reason in reasons)
    # without the hop another subject's turn of the same kind takes the place
    found, _ = _texts(tmp_path, texts, config, question, k, hops=False)
    assert not gold <= set(found)


def test_no_hop_for_a_question_about_no_defined_subject(tmp_path):
    _, reasons = _texts(tmp_path, ENGLISH, Config(), "Where does my aunt Rosa work?", 3, hops=True)
    assert not any(reason.startswith("shares a subject with") for reason in reasons)



TWO_QUESTIONS = ["我去的公园是东湖公园。", "东湖公园真不错，湖边的公园步道很适合散步，公园里人也不多。",
                 "我的上司名叫赵宇轩。", "我上司的电话是13206366146。", "我表哥的电话是13642035210。",
                 "我同事的电话是19842342126。", "我舅舅去的公园是中山公园。", "我上司喜欢画画。"]


def test_a_message_that_asks_two_questions_gets_each_questions_best(tmp_path):
    question = "我去的公园叫什么？另外，我上司的电话是多少？"
    config = Config(encoders=EncoderConfig(embedding_model="auto"))
    with Memory(tmp_path / "parts.db", user="u", config=config) as mem:
        mem.add_many([{"text": t} for t in TWO_QUESTIONS])
        found = [e.text for e in mem.search(question, k=3)]
        best = [mem.search(part, k=1)[0].text for part in ("我去的公园叫什么？", "另外，我上司的电话是多少？")]
    assert set(best) <= set(found)
    assert set(best) == {"我去的公园是东湖公园。", "我上司的电话是13206366146。"}


def _item(trace_id):
    from zeromem.types import Evidence, Provenance
    return Evidence(trace_id=trace_id, text=trace_id, score=0.0,
                    provenance=Provenance(trace_id, "s", None, None, None, 0))


def test_answers_take_turns_after_the_whole_messages_best():
    from zeromem.retrieval.evidence_order import taking_turns
    whole = [_item(t) for t in "abcd"]
    answers = [[_item(t) for t in "bef"], [_item(t) for t in "gah"]]
    assert [e.trace_id for e in taking_turns(whole, answers, 5)] == ["a", "b", "g", "e", "f"]
    assert [e.trace_id for e in taking_turns(whole, [[], []], 3)] == ["a", "b", "c"]
