"""Subject hops through the public API: a question that defines what it asks about through
something else ("the person who has this email: where do they work?") gets the turn that
says it about the same subject, not another subject's turn of the same kind (D-051)."""

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
