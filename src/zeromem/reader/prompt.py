"""The reader prompt: a rendered memory context plus one question, as chat messages.

The context block is passed through verbatim — it already carries each excerpt's session date
and speaker — so the model answers from what was actually said. The answer is asked short
(LoCoMo scores token F1 against short phrases) and the abstention phrase matches the one
LoCoMo's evaluation looks for in category-5 answers.
"""

from __future__ import annotations

ABSTAIN = "No information available"

SYSTEM_PROMPT = (
    "You answer questions about a person's conversation history using only the memory "
    "excerpts you are given. Each excerpt shows when it was said and who said it. "
    "Reply with a short phrase, not a sentence, using exact words from the excerpts whenever "
    "possible. For questions about time, answer with the date the excerpts imply, resolving "
    "words like 'yesterday' or 'last week' against the excerpt's date. "
    f"If the excerpts do not contain the answer, reply exactly: {ABSTAIN}."
)


def build_messages(question: str, context: str) -> list[dict[str, str]]:
    """Chat messages (system + user) asking ``question`` over the memory ``context``."""
    if not question.strip():
        raise ValueError("the reader needs a non-empty question")
    body = context.strip() or "(no memory excerpts were retrieved)"
    user = f"Memory excerpts:\n{body}\n\nQuestion: {question.strip()}\nShort answer:"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


AGENT_SYSTEM_PROMPT = (
    "You are a helpful assistant with a long-term memory. Before the user's message you are "
    "shown what your memory holds that bears on it: earlier messages quoted verbatim, each with "
    "when it was said and who said it, and the latest turns of this conversation. Use them when "
    "they help, say so when they do not settle something, and never invent past events."
)


def build_agent_messages(message: str, context: str) -> list[dict[str, str]]:
    """Chat messages for one agent-loop turn: the memory ``context``, then the user's message."""
    if not message.strip():
        raise ValueError("the agent loop needs a non-empty message")
    body = f"{context.strip()}\n\nUser: {message.strip()}" if context.strip() else message.strip()
    return [{"role": "system", "content": AGENT_SYSTEM_PROMPT}, {"role": "user", "content": body}]
