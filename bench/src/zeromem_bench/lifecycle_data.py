"""Generated data of ``bench lifecycle``: filler noise and correction chains (seeded templates).

Filler is what crowds an agent's memory in real use — acknowledgements and small talk — made
from fixed templates with a seeded generator, so every run injects the same noise. Correction
chains state an attribute and correct it 1–4 times (chains of 2–5 links), with filler between
the links; the question asks for the current value.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

ACKS = ("ok", "okay!", "haha yes", "sure thing!", "lol", "got it, thanks", "cool cool", "nice!",
        "yeah totally", "sounds good", "thanks!", "alright", "ha, true", "yep", "no worries")
SMALL_TALK = ("How's the weather over there?", "Did you sleep well?", "What are you up to today?",
              "Same here, just relaxing.", "Not much, just chilling at home.", "That's funny.",
              "Oh really?", "I see.", "Hope you're having a good day!", "Talk soon!",
              "Just had some coffee.", "It's been a long week.", "Anyway, how are things?",
              "Ha, that reminds me of something.", "Let's catch up later.")


def filler(rng: random.Random) -> str:
    """One line of noise: an acknowledgement or a bit of small talk (half each)."""
    return rng.choice(ACKS) if rng.random() < 0.5 else rng.choice(SMALL_TALK)


def with_noise(drafts: list[dict[str, Any]], ratio: int, seed: int = 0) -> list[dict[str, Any]]:
    """``drafts`` with ``ratio`` filler turns after each real one, in the same session and
    time, said alternately by the conversation's speakers; real turns keep their fields."""
    rng = random.Random(seed)
    speakers: list[str | None] = [*sorted({str(d["speaker"]) for d in drafts if d.get("speaker")})] or [None]
    out: list[dict[str, Any]] = []
    for i, draft in enumerate(drafts):
        out.append(dict(draft))
        for j in range(ratio):
            out.append({"text": filler(rng), "speaker": speakers[(i + j + 1) % len(speakers)],
                        "session": draft.get("session"), "session_time": draft.get("session_time"),
                        "role": draft.get("role", "user"), "source_id": f"noise:{i}:{j}"})
    for seq, draft in enumerate(out):
        draft["seq"] = seq
    return out


@dataclass(frozen=True)
class Attribute:
    name: str  # as the question names it
    first: tuple[str, ...]  # templates of the first statement
    later: tuple[str, ...]  # templates of a correction
    values: tuple[str, ...]
    question: str


ATTRIBUTES = (
    Attribute("residence", ("I live in {v}.", "I'm living in {v} these days."),
              ("Actually, I moved to {v} last week.", "I now live in {v}.", "I just relocated to {v}."),
              ("Boston", "Denver", "Lisbon", "Austin", "Seattle", "Toronto", "Madrid", "Oslo", "Chicago", "Dublin"),
              "Where does {s} live now?"),
    Attribute("favorite color", ("My favorite color is {v}.",),
              ("Actually, my favorite color is {v} now.", "My favorite color has become {v}."),
              ("blue", "green", "red", "purple", "orange", "yellow", "teal", "black"),
              "What is {s}'s favorite color?"),
    Attribute("phone number", ("My phone number is {v}.",),
              ("My phone number has changed to {v}.", "My new phone number is {v}."),
              ("555-0101", "555-0199", "555-0142", "555-0177", "555-0123", "555-0168"),
              "What is {s}'s phone number?"),
    Attribute("employer", ("I work at {v}.",),
              ("I just started working at {v}.", "I now work for {v}."),
              ("Acme", "Globex", "Initech", "Umbrella", "Stark Industries", "Wayne Enterprises", "Hooli"),
              "Where does {s} work?"),
    Attribute("meeting", ("My meeting is on {v}.",),
              ("Sorry, I meant {v}.", "Actually, make that {v}.", "My meeting was moved to {v}."),
              ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"),
              "What day is {s}'s meeting?"),
    Attribute("diet", ("My diet is {v}.",),
              ("I switched my diet to {v}.", "My diet is now {v}."),
              ("vegetarian", "vegan", "keto", "paleo", "pescatarian", "gluten-free"),
              "What diet does {s} follow?"),
)
BARE = ("Sorry, I meant", "Actually, make that")
NAMES = ("Ana", "Bo", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kemal", "Lena")


@dataclass(frozen=True)
class Chain:
    speaker: str
    attribute: str
    question: str
    values: tuple[str, ...]
    source_ids: tuple[str, ...]  # of the links, oldest first


def correction_chains(n: int, seed: int = 0, per_memory: int = 6
                      ) -> list[tuple[list[dict[str, Any]], list[Chain]]]:
    """``n`` chains of 2–5 links in memories of ``per_memory`` chains each, as (drafts, chains).

    Each chain is one speaker's attribute; links are 1–5 filler turns apart, in one session
    (bare corrections such as "Sorry, I meant Friday." only bind within a session), and the
    chains of one memory interleave."""
    rng = random.Random(seed)
    memories = []
    for start in range(0, n, per_memory):
        count = min(per_memory, n - start)
        speakers = rng.sample(NAMES, count)
        plans = []
        for speaker in speakers:
            attribute = rng.choice(ATTRIBUTES)
            length = rng.randint(2, 5)
            values = tuple(rng.sample(attribute.values, length))
            texts = [rng.choice(attribute.first).format(v=values[0])]
            texts += [rng.choice(attribute.later).format(v=v) for v in values[1:]]
            plans.append((speaker, attribute, values, texts))
        drafts: list[dict[str, Any]] = []
        links: dict[int, list[str]] = {i: [] for i in range(count)}
        cursor = [0] * count
        while any(cursor[i] < len(plans[i][3]) for i in range(count)):
            i = rng.choice([c for c in range(count) if cursor[c] < len(plans[c][3])])
            speaker, _, _, texts = plans[i]
            while True:
                source_id = f"chain{start + i}:{cursor[i]}"
                drafts.append({"text": texts[cursor[i]], "speaker": speaker, "source_id": source_id})
                links[i].append(source_id)
                cursor[i] += 1
                for _ in range(rng.randint(1, 2)):
                    drafts.append({"text": filler(rng), "speaker": rng.choice(speakers),
                                   "source_id": f"noise{start}:{len(drafts)}"})
                # A bare correction ("Sorry, I meant Friday.") follows what it corrects closely.
                if cursor[i] >= len(texts) or not texts[cursor[i]].startswith(BARE):
                    break
        for seq, draft in enumerate(drafts):
            draft.update(session="s1", seq=seq, session_time="2024-03-01T10:00:00", role="user")
        chains = [Chain(plans[i][0], plans[i][1].name, plans[i][1].question.format(s=plans[i][0]),
                        plans[i][2], tuple(links[i])) for i in range(count)]
        memories.append((drafts, chains))
    return memories
