"""Other names of the speakers, learned from the conversation (retrieval/speaker_names.py)."""

from collections import Counter

from zeromem.retrieval.speaker_names import SpeakerNames, addressed_names, learn_names, variant_of


def test_addressed_names_after_a_greeting_or_a_comma():
    assert addressed_names("Hey Kate! How are you?") == ("Kate",)
    assert addressed_names("Thank you so much Kate. I loved it") == ("Kate",)
    assert addressed_names("That sounds great, Kate!") == ("Kate",)
    assert addressed_names("Hey girl!") == ()
    assert addressed_names("I went to Paris with Kate") == ()


def _writers(table):
    return lambda word: Counter(table.get(word, {}))


def test_a_name_one_speaker_is_called_by_and_never_writes():
    vocatives = {0: ("Kate",), 2: ("Kate",), 4: ("Miami",), 6: ("Miami",)}
    addressee = {0: "Emi", 2: "Emi", 4: "Emi", 6: "Emi"}
    writers = _writers({"kate": {"elise": 9, "Emi": 1}, "miami": {"elise": 5, "Emi": 6}})
    learned = learn_names(vocatives, addressee.get, writers, ["Emi", "elise"])
    assert learned == {"kate": "Emi"}  # Miami is written by Emi too: a place, not her name


def test_one_address_is_not_enough():
    learned = learn_names({0: ("Kate",)}, {0: "Emi"}.get, _writers({}), ["Emi", "elise"])
    assert learned == {}


def test_spelling_variants_of_exactly_one_speaker():
    names = {"akib": "Akib", "fahim": "Fahim Khan", "nebraas": "Nebraas"}
    assert variant_of("Aqib", names) == "Akib"
    assert variant_of("Faheem", names) == "Fahim Khan"
    assert variant_of("Nerbaas", names) == "Nebraas"  # two letters swapped: one edit
    assert variant_of("Bob", names) is None
    assert variant_of("Akim", {"akib": "Akib", "akin": "Akin"}) is None  # ambiguous


def test_canonical_rewrites_only_names_the_conversation_does_not_use():
    writers = _writers({"akin": {"Fahim Khan": 2}})
    names = SpeakerNames(["Akib", "Fahim Khan"], {"kate": "Akib"}, writers)
    assert names.canonical("What did Aqib play with Faheem's brother?") == "What did Akib play with Fahim's brother?"
    assert names.canonical("What does Kate like?") == "What does Akib like?"
    assert names.canonical("Did Akin call?") == "Did Akin call?"  # someone the chat talks about
    assert names.canonical("what did aqib play") == "what did aqib play"  # not written as a name


def test_roles_have_no_spelling_variants():
    names = SpeakerNames(["assistant", "user"], {}, _writers({}))
    assert names.canonical("Did Uber call?") == "Did Uber call?"


def test_without_names_keeps_what_is_asked():
    names = SpeakerNames(["Nicolas", "Nebraas", "user"], {}, _writers({}))
    assert names.without_names("What hobbies does Nicolas have?") == "What hobbies does have?"
    assert names.without_names("What is Nebraas's job and Nicolas’s?") == "What is job and ?"
    assert names.without_names("What did the user say?") == "What did the user say?"  # a role stays
