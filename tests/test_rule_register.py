"""Every rule of the engine is accountable: named in the register of rule families
(``zeromem.retrieval.rules``) with its origin, and switchable.

- Every module-level word or pattern table of ``retrieval/`` and ``views/`` (an UPPER_CASE name
  whose value is not a number: a regex, a word set, a label table) belongs to exactly one
  registered family, or is listed in ``NOT_RULES`` with why it is no rule; a family names only
  tables that exist.
- Every family names a decision record that exists and the data it was tuned on, and every
  constant it owns has a row in docs/ranking-constants.md.
- ``RetrievalConfig.disabled_rules`` refuses a name the register does not know.
- Switching a family off changes the evidence or the scores of at least one search on a small
  fixture memory (a switch nothing reaches would be a family that does nothing).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from module_constants import module_constants
from test_short_messages import LONGER
from zeromem import Memory
from zeromem.config import Config, EncoderConfig, RetrievalConfig
from zeromem.errors import InvalidInput
from zeromem.retrieval.rules import RULE_FAMILIES, RULE_NAMES, checked_rules, rule_family

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "zeromem"
# The modules whose rules rank; rules.py is the register itself.
MODULES = sorted(path for path in [*(PACKAGE / "retrieval").glob("*.py"), *(PACKAGE / "views").glob("*.py")]
                 if path.name != "rules.py")
DECISIONS = ROOT / "docs" / "decisions"
REGISTER = ROOT / "docs" / "ranking-constants.md"

# Module-level non-numeric constants that are no ranking rule, with why.
NOT_RULES = {
    "retrieval/answer_calibration.py:_WORD": "the reader's answer is checked, not ranked",
    "retrieval/answer_calibration.py:_NUMBER_WORD": "the reader's answer is checked, not ranked",
    "retrieval/calibrate.py:_LISTENERS": "an input of the fitted no-answer model (bench fit-no-answer)",
    "retrieval/footprint.py:_NEVER": "how an index's bytes are measured",
    "retrieval/footprint.py:_OWNED_PACKAGES": "how an index's bytes are measured",
    "retrieval/health.py:_SKIPPED": "what a degraded search reports",
    "retrieval/persist.py:CHECKSUM_PART": "the persisted index format",
    "retrieval/persist.py:_PLAIN_HEADER": "the persisted index format",
    "retrieval/persist_checks.py:LEVELS": "the persisted index format",
    "retrieval/profile.py:_WORD": "splits a question into words (every rule reads them)",
    "retrieval/profile.py:_HAN": "tells Chinese text from other text",
    "retrieval/profile_zh.py:_PUNCT": "splits a Chinese question into words",
    "views/adjacency.py:WEIGHT_DTYPE": "the edge weights' number type",
}

_ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|")
_DECISION = re.compile(r"\bD-(\d{3})\b")


def _is_numeric(node: ast.expr) -> bool:
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return all(isinstance(n, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.operator,
                                  ast.unaryop)) for n in ast.walk(node))
    numbers = (int, float)
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers):
        return True
    if isinstance(value, dict):
        return bool(value) and all(isinstance(v, numbers) for v in value.values())
    if isinstance(value, (tuple, list)):
        return bool(value) and all(isinstance(v, numbers) for v in value)
    return False


def code_tables() -> set[str]:
    """"module.py:NAME" of every module-level UPPER_CASE constant of ``MODULES`` that is not a
    number (those are the ranking constants' register's)."""
    return {f"{path.relative_to(PACKAGE)}:{name}" for path, name, expr in module_constants(MODULES)
            if not _is_numeric(expr)}


def test_the_scan_finds_the_rule_tables() -> None:
    tables = code_tables()
    assert {"retrieval/profile.py:_ANSWER_LABELS", "retrieval/speaker_names.py:_GREETING",
            "views/graph.py:_GENERIC_HEADS"} <= tables
    assert len(tables) >= 40
    assert "retrieval/closure.py:NEXT_DECAY" not in tables  # a number: the other register's


def test_every_rule_table_belongs_to_one_registered_family() -> None:
    owners: dict[str, list[str]] = {}
    for family in RULE_FAMILIES:
        for table in family.tables:
            owners.setdefault(table, []).append(family.name)
    tables = code_tables()
    orphans = sorted(tables - set(owners) - set(NOT_RULES))
    assert not orphans, ("rule tables that belong to no family of retrieval/rules.py "
                         "(register them, or list them in NOT_RULES with why they rank nothing):\n"
                         + "\n".join(orphans))
    twice = {table: names for table, names in owners.items() if len(names) > 1}
    assert not twice, f"tables registered under two families: {twice}"
    stale = sorted((set(owners) | set(NOT_RULES)) - tables)
    assert not stale, f"registered tables the code no longer has: {stale}"


def test_every_family_has_an_origin_and_documented_constants() -> None:
    records = {match.group(1) for path in DECISIONS.glob("*.md")
               if (match := re.match(r"^(\d{4})-", path.name))}
    rows = {m.group(1) for line in REGISTER.read_text(encoding="utf-8").splitlines()
            if (m := _ROW.match(line))}
    assert len(set(RULE_NAMES)) == len(RULE_NAMES)
    for family in RULE_FAMILIES:
        cited = _DECISION.findall(family.origin)
        assert cited, f"{family.name}: its origin names no decision record"
        missing = [d for d in cited if f"0{d}" not in records]
        assert not missing, f"{family.name}: no record for D-{missing}"
        assert family.tuned_on.strip(), f"{family.name}: the data it was tuned on is not said"
        undocumented = [c for c in family.constants if c not in rows]
        assert not undocumented, f"{family.name}: constants without a row in docs/ranking-constants.md: {undocumented}"


def test_an_unknown_family_is_refused_naming_the_known_ones(tmp_path) -> None:
    with pytest.raises(InvalidInput, match="known: several_questions, speaker_aliases"):
        checked_rules(["graph_view", "no_such_rule"])
    with pytest.raises(InvalidInput, match="unknown rule family 'graphview'"):
        Memory(tmp_path / "m.db", config=Config(retrieval=RetrievalConfig(disabled_rules=("graphview",))))
    assert checked_rules("graph_view") == {"graph_view"}  # one name written without its tuple
    for retired in ("newest_value", "question_focus"):  # D-068, D-069: gone, not silently ignored
        with pytest.raises(InvalidInput, match=f"unknown rule family '{retired}'"):
            checked_rules([retired])
    assert rule_family("titles").origin.startswith("D-030")


# -- every switch reaches something -----------------------------------------------------------

def _chat() -> list[dict]:
    """Two people in three dated sessions: short messages in bursts, questions and answers,
    places, a moved home, a nickname Bob greets Alice by, and a page titled after a place."""
    s1, s2, s3 = ("s1", "2024-01-10T18:00:00"), ("s2", "2024-01-20T18:00:00"), ("s3", "2024-03-05T18:00:00")
    lines = [
        (s1, "Alice", "I went hiking at Mount Tamalpais on Saturday."),
        (s1, "Alice", "The view of the bay was amazing."),
        (s1, "Alice", "My legs still hurt lol"),
        (s1, "Bob", "Hey Ally, that sounds great!"),
        (s1, "Bob", "Did you bake anything this week?"),
        (s1, "Alice", "Yes, I baked a lemon cake for my sister."),
        (s1, "Bob", "I cooked a big pot of chili for the team."),
        (s1, "Alice", "I live in Boston, near the harbour."),
        (s1, "Bob", "How was Paris last spring?"),
        (s1, "Alice", "I visited Paris and Rome, both were lovely."),
        (s1, "Alice", "Lisbon too, the tiles everywhere!"),
        (s2, "Bob", "Hey Ally, how are you?"),
        (s2, "Alice", "Busy week at the clinic."),
        (s2, "Bob", "My birthday party is in ten months, are you coming?"),
        (s2, "Alice", "Of course I will come."),
        (s2, "Bob", "I started learning the guitar."),
        (s2, "Alice", "Cool, which songs?"),
        (s2, "Bob", "Mostly old blues songs."),
        (s2, "Alice", "I went hiking again, this time near Mount Diablo."),
        (s2, "Bob", "Thanks Ally, see you soon."),
        (s3, "Alice", "Big news: I moved, I live in Denver now."),
        (s3, "Bob", "Wow, Denver! Do you like it?"),
        (s3, "Alice", "Yes, the mountains are close."),
        (s3, "Bob", "I adopted a dog named Pepper."),
        (s3, "Alice", "Pepper is such a cute name."),
        (s3, "Bob", "She loves the park."),
        (s3, "Alice", "I baked cookies for my new neighbours."),
        (s3, "Bob", "Did they like them?"),
        (s3, "Alice", "They asked for the recipe."),
        (s3, "Bob", "I cooked pasta with Pepper watching me."),
    ]
    turns = [{"text": text, "speaker": who, "session": session, "session_time": time}
             for (session, time), who, text in lines]
    turns.append({"text": "A peak in Marin County, California, with views of San Francisco Bay.",
                  "session": "page", "metadata": {"title": "Mount Tamalpais"},
                  "session_time": "2024-02-01T00:00:00"})
    return turns


NOTES = ["My aunt Rosa has the email rosa.k@example.org.", "My cousin Tim works at a bakery.",
         "My aunt Rosa works at the city library.", "My boss Karen works at the downtown office.",
         "My neighbour Ali has the email ali@example.org.", "My uncle Ben works at a garage.",
         "My aunt Rosa likes gardening.", "My friend Joe works at a school."]
ASSISTANT = [
    ("user", "Oh and last weekend I fixed up the old harbour bicycle, it needed a new chain."),
    ("assistant", "Repairing an old harbour bicycle is a great weekend project! A new chain makes a "
                  "big difference. When you repair an old bicycle, check the chain, the brakes and "
                  "the tyres; an old harbour bicycle often needs new cables too."),
    ("user", "Could you suggest a good route along the coast?"),
    ("assistant", "Try the coastal path from the harbour to the lighthouse: it is flat and quiet."),
]
# Paragraphs longer than short messages (selection's coverage bonus acts there): the same
# as the coverage test's.
DOCUMENTS = LONGER
ZH = ["我去的公园是东湖公园。", "东湖公园真不错，湖边的公园步道很适合散步，公园里人也不多。",
      "我的上司名叫赵宇轩。", "我上司的电话是13206366146。", "我表哥的电话是13642035210。",
      "我同事的电话是19842342126。", "我舅舅去的公园是中山公园。", "我上司喜欢画画。"]

QUESTIONS = {
    "chat": ["Where did Alice go hiking?", "What did Ally bake?", "What does Bob cook?",
             "Which cities has Alice visited?", "How many times did Alice go hiking?",
             "Where does Alice live now?", "What did Bob say about his birthday party on 12.01.2024?",
             "Tell me about Mount Tamalpais.",
             "What did Alice and Bob talk about in March 2024?",
             "Where did Alice go hiking? And what did Bob cook?", "Who is Pepper?"],
    "notes": ["Where does the person who has the email rosa.k@example.org work?",
              "What does my aunt Rosa like?"],
    "assistant": ["What did I repair on the old harbour bicycle?"],
    "documents": ["What did the lighthouse keeper paint?"],
}
ZH_QUESTIONS = ["东湖公园真不错。我去的公园叫什么？", "我去的公园叫什么？另外，我上司的电话是多少？"]


@pytest.fixture(scope="module")
def fixture_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("rules") / "rules.db"
    with Memory(path) as mem:
        mem.add_many(_chat(), user="chat")
        mem.add_many([{"text": text} for text in NOTES], user="notes")
        mem.add_many([{"text": text, "role": role, "speaker": role, "session": "s1"}
                      for role, text in ASSISTANT], user="assistant")
        mem.add_many([{"text": text, "session": f"p{i}"} for i, text in enumerate(DOCUMENTS)], user="documents")
    with Memory(path.with_name("zh.db"), config=Config(encoders=EncoderConfig(embedding_model="auto"))) as mem:
        mem.add_many([{"text": text} for text in ZH], user="zh")
    return path


def _answers(path: Path, disabled: tuple[str, ...]) -> list[tuple]:
    """Every fixture question's evidence (ids and scores) and no-answer score."""
    out = []
    config = Config(retrieval=RetrievalConfig(disabled_rules=disabled))
    with Memory(path, config=config) as mem:
        for user, questions in QUESTIONS.items():
            for question in questions:
                result = mem.search_detailed(question, user=user, k=5)
                out.append((question, [(e.trace_id, e.score) for e in result.evidence], result.no_answer_score))
    zh = Config(encoders=EncoderConfig(embedding_model="auto"), retrieval=RetrievalConfig(disabled_rules=disabled))
    with Memory(path.with_name("zh.db"), config=zh) as mem:
        for question in ZH_QUESTIONS:
            result = mem.search_detailed(question, user="zh", k=3)
            out.append((question, [(e.trace_id, e.score) for e in result.evidence], result.no_answer_score))
    return out


@pytest.fixture(scope="module")
def all_on(fixture_store) -> list[tuple]:
    return _answers(fixture_store, ())


@pytest.mark.parametrize("family", RULE_NAMES)
def test_switching_a_family_off_changes_a_search(fixture_store, all_on, family) -> None:
    off = _answers(fixture_store, (family,))
    changed = [on[0] for on, other in zip(all_on, off) if on != other]
    assert changed, f"switching {family} off changed no search of the fixture: it reaches nothing"
