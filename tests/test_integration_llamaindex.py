"""The LlamaIndex adapter: ZeromemMemoryBlock inside LlamaIndex's own ``Memory``.

Short-term memory is LlamaIndex's SQL chat store (in-memory SQLite through aiosqlite); a small
token limit makes it flush its oldest messages into the block, whose evidence then comes back
through ``Memory.get()``. Token counting is a whitespace split (``tokenizer_fn``), so every
flush is predictable; one test keeps LlamaIndex's default tiktoken counter to show it works
offline. No LLM anywhere: zeromem's LLM-call counter stays at 0 and sockets refuse to connect.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock, ThinkingBlock, ToolCallBlock
from llama_index.core.memory import Memory as ChatMemory
from llama_index.core.memory import StaticMemoryBlock

from zeromem import InvalidInput, Memory
from zeromem.encoders.token_count import count_budget_tokens
from zeromem.integrations import llamaindex
from zeromem.integrations.llamaindex import DROPPED_KEY, KWARGS_KEY, PART_KEY, ZeromemMemoryBlock
from zeromem.interfaces import extras
from zeromem.interfaces.extras import MissingExtra
from zeromem.reader import usage

CONVERSATION = [
    ("user", "My cat is called Miso and she loves tuna."),
    ("assistant", "Miso sounds adorable!"),
    ("user", "I also started learning the cello this spring."),
    ("assistant", "The cello is a beautiful instrument."),
    ("user", "My sister lives in Porto."),
    ("assistant", "Porto is lovely."),
]


@pytest.fixture(autouse=True)
def _offline(no_network):
    """Every test here runs without network (conftest.no_network)."""


@pytest.fixture
def memory(tmp_path):
    mem = Memory(tmp_path / "llamaindex.db", user="ana")
    yield mem
    mem.close()


def chat_memory(block, session_id: str = "chat-1", **options) -> ChatMemory:
    """A LlamaIndex Memory that keeps ~20 whitespace tokens of chat history and flushes the rest."""
    settings = {"token_limit": 40, "chat_history_token_ratio": 0.5, "token_flush_size": 10,
                "tokenizer_fn": str.split, "insert_method": "user", **options}
    return ChatMemory.from_defaults(session_id=session_id, memory_blocks=[block], **settings)


def put_all(chat: ChatMemory, turns) -> None:
    for role, text in turns:
        chat.put(ChatMessage(role=role, content=text))


def test_flushed_messages_are_stored_verbatim_and_come_back_as_evidence(memory):
    before = usage()
    block = ZeromemMemoryBlock(memory=memory, speakers={"user": "Ana"})
    chat = chat_memory(block)
    put_all(chat, CONVERSATION)

    # The oldest messages left short-term memory and are now traces, in order, verbatim.
    archived = chat.get_all(status=None)
    stored = memory.list(session="chat-1")
    assert len(stored) >= 2
    assert [(t.role, t.text) for t in stored] == [(m.role.value, m.content) for m in archived][:len(stored)]
    assert (stored[0].role, stored[0].speaker, stored[0].text) == ("user", "Ana", CONVERSATION[0][1])
    assert stored[1].speaker is None and stored[0].event_time is not None
    assert all(t.metadata == {} for t in stored)  # LlamaIndex's session_id kwarg is the session
    assert [t.seq for t in stored] == list(range(len(stored)))
    active = [m.content for m in chat.get_all(status=llamaindex_active())]
    assert CONVERSATION[0][1] not in active

    # A question about a flushed message: get() puts the evidence, with its trace id, into
    # the latest user message (insert_method="user").
    chat.put(ChatMessage(role="user", content="What is my cat called?"))
    messages = chat.get()
    last = messages[-1]
    assert last.role.value == "user" and last.content.endswith("What is my cat called?")
    assert f"[{stored[0].id}] Ana: My cat is called Miso and she loves tuna." in last.content
    assert "<zeromem>" in last.content
    assert usage() - before == type(before)()  # zero LLM calls from zeromem


def llamaindex_active():
    from llama_index.core.storage.chat_store.sql import MessageStatus

    return MessageStatus.ACTIVE


def test_system_insertion_async_api_and_a_later_session_find_earlier_ones(memory):
    block = ZeromemMemoryBlock(memory=memory, k=3, budget_tokens=60)

    async def main():
        first = chat_memory(block, session_id="monday", insert_method="system")
        await first.aput_messages([ChatMessage(role=r, content=t) for r, t in CONVERSATION])
        later = chat_memory(block, session_id="friday", insert_method="system")
        await later.aput(ChatMessage(role="user", content="Where does my sister live?"))
        return await later.aget()

    messages = asyncio.run(main())
    assert messages[0].role.value == "system"
    system = messages[0].content
    assert "--- monday" in system  # evidence from the earlier session, under its name
    flushed = {t.text for t in memory.list(session="monday")}
    assert any(text in system for text in flushed)
    assert count_budget_tokens(system.split("<zeromem>")[1].split("</zeromem>")[0].strip()) <= 60
    assert messages[-1].content == "Where does my sister live?"


def test_nothing_flushed_or_nothing_to_ask_adds_no_memory(memory):
    block = ZeromemMemoryBlock(memory=memory)
    chat = chat_memory(block)
    chat.put(ChatMessage(role="user", content="Hello there."))
    assert [m.content for m in chat.get()] == ["Hello there."]  # an empty store finds nothing
    assert asyncio.run(block.aget([ChatMessage(role="assistant", content="only the assistant")])) == ""
    assert asyncio.run(block.aget(None)) == ""


def test_scopes_and_sessions_stay_apart(memory):
    memory.add("Bob's secret: the vault code is 4512.", user="bob", session="chat-1")
    memory.add("Another conversation mentions the cello teacher, Ines.", session="elsewhere")
    ana = ZeromemMemoryBlock(memory=memory, this_session_only=True)
    bob = ZeromemMemoryBlock(memory=memory, user="bob", name="bob_memory")
    put_all(chat_memory(ana), CONVERSATION)
    assert all(t.user == "bob" for t in memory.list(user="bob"))
    assert len(memory.list(user="bob")) == 1  # ana's block wrote nothing into bob's scope

    asked = [ChatMessage(role="user", content="Who teaches me the cello? What is the vault code?")]
    evidence = asyncio.run(ana.aget(asked, session_id="chat-1"))
    assert "cello" in evidence and "Ines" not in evidence and "4512" not in evidence
    everywhere = ZeromemMemoryBlock(memory=memory)  # default: every session of the scope
    assert "Ines" in asyncio.run(everywhere.aget(asked))
    assert "4512" in asyncio.run(bob.aget(asked)) and "cello" not in asyncio.run(bob.aget(asked))
    fixed = ZeromemMemoryBlock(memory=memory, session="notes")
    asyncio.run(fixed.aput([ChatMessage(role="user", content="Stored under a fixed session.")]))
    assert [t.text for t in memory.list(session="notes")] == ["Stored under a fixed session."]


def test_message_shapes_kwargs_and_long_messages(memory):
    block = ZeromemMemoryBlock(memory=memory, session="shapes")
    long_text = "lorem ipsum dolor " * 7000  # 126 000 characters: more than one trace holds
    messages = [
        ChatMessage(role="assistant", blocks=[ThinkingBlock(content="let me check"),
                                              ToolCallBlock(tool_call_id="c1", tool_name="weather",
                                                            tool_kwargs={"city": "Lyon"})]),
        ChatMessage(role="tool", content="12°C and rain",
                    additional_kwargs={"tool_call_id": "c1", "name": "weather", "when": object(),
                                       "session_id": "ignored"}),
        ChatMessage(role="user", blocks=[TextBlock(text="Look at this:"),
                                         ImageBlock(url="https://example.com/cat.png")]),
        ChatMessage(role="assistant", content="",
                    additional_kwargs={"tool_calls": [{"id": "c2", "type": "function",
                                                       "function": {"name": "lookup", "arguments": "{}"}}]}),
        ChatMessage(role="chatbot", content="   "),
        ChatMessage(role="developer", content="Be brief."),
        ChatMessage(role="user", content=long_text, additional_kwargs={"big": "x" * 40_000}),
    ]
    asyncio.run(block.aput(messages))
    traces = memory.list(session="shapes")
    assert [(t.role, t.text) for t in traces[:6]] == [
        ("assistant", 'weather({"city":"Lyon"})'),
        ("tool", "12°C and rain"),
        ("user", "Look at this:\n[image]"),
        ("assistant", "lookup({})"),
        ("assistant", "[empty chatbot message]"),
        ("system", "Be brief."),
    ]
    assert traces[1].metadata == {KWARGS_KEY: {"tool_call_id": "c1", "name": "weather"}, DROPPED_KEY: ["when"]}
    assert traces[3].metadata[KWARGS_KEY]["tool_calls"][0]["function"]["name"] == "lookup"
    parts = traces[6:]
    assert [t.metadata[PART_KEY] for t in parts] == [[1, 2], [2, 2]]
    assert "".join(t.text for t in parts) == long_text
    assert all(t.metadata[DROPPED_KEY] == ["big"] for t in parts)  # over the kwargs budget
    assert all(len(t.text) <= memory.config.max_text_chars for t in parts)


def test_bad_settings_are_a_clear_invalid_input(memory):
    for bad in ({"k": 0}, {"budget_tokens": 0}, {"query_messages": 0}, {"session": "  "},
                {"speakers": {"human": "Ana"}}, {"user": 3}, {"timestamps": "yes"}, {"k": True},
                {"k": "5"}, {"this_session_only": 1}):
        with pytest.raises(InvalidInput, match="ZeromemMemoryBlock"):
            ZeromemMemoryBlock(memory=memory, **bad)
    with pytest.raises(InvalidInput, match="memory"):
        ZeromemMemoryBlock(memory="memory.db")
    with pytest.raises(InvalidInput, match="memory"):
        ZeromemMemoryBlock()


def test_works_beside_other_blocks_and_with_the_default_tokenizer_offline(memory):
    block = ZeromemMemoryBlock(memory=memory)  # priority 0: LlamaIndex never truncates it
    static = StaticMemoryBlock(static_content="The user is called Ana.")
    chat = ChatMemory.from_defaults(session_id="chat-1", token_limit=60, chat_history_token_ratio=0.5,
                                    token_flush_size=15, memory_blocks=[static, block])
    put_all(chat, CONVERSATION * 2)
    chat.put(ChatMessage(role="user", content="What does Miso love to eat?"))
    system = chat.get()[0]
    assert system.role.value == "system"
    assert "The user is called Ana." in system.content and "tuna" in system.content
    assert memory.list(session="chat-1")


def test_a_truncated_block_keeps_its_best_evidence(memory):
    memory.add_many([{"text": text, "session": "old", "role": role} for role, text in CONVERSATION])
    block = ZeromemMemoryBlock(memory=memory, k=6, priority=1)
    full = asyncio.run(block.aget([ChatMessage(role="user", content="What is my cat called and what does she eat?")]))
    assert "Miso and she loves tuna" in full
    size = count_budget_tokens(full)
    shorter = asyncio.run(block.atruncate(full, size // 2))
    assert shorter and count_budget_tokens(shorter) <= size - size // 2
    assert "Miso and she loves tuna" in shorter  # the best match stays
    assert asyncio.run(block.atruncate(full, size)) is None  # nothing left to show
    assert asyncio.run(block.atruncate("other text", 1)) is None  # not what it rendered

    # Under a LlamaIndex Memory over its limit, a priority-1 block is shrunk, not dropped.
    chat = chat_memory(block, token_limit=40, chat_history_token_ratio=0.3, token_flush_size=5)
    put_all(chat, [("user", "Hi."), ("assistant", "Hello!")] * 3)
    chat.put(ChatMessage(role="user", content="What is my cat called?"))
    content = chat.get()[-1].content
    assert "<zeromem>" in content and "loves tuna" in content
    assert content.count("\n[t") < full.count("\n[t")  # fewer evidence lines than untruncated


def test_a_missing_llamaindex_extra_says_how_to_install_it(monkeypatch, memory):
    modules, purpose = extras.EXTRAS["llamaindex"]
    monkeypatch.setitem(extras.EXTRAS, "llamaindex", (("zeromem_no_such_module", *modules), purpose))
    monkeypatch.setattr(llamaindex, "_BLOCK_CLASS", None)  # as in a process that never built it
    with pytest.raises(MissingExtra, match=r"pip install 'zeromem\[llamaindex\]'") as err:
        llamaindex.ZeromemMemoryBlock(memory=memory)
    assert "zeromem_no_such_module" in str(err.value)
    with pytest.raises(AttributeError):
        _ = llamaindex.NoSuchName


def test_importing_the_adapter_does_not_import_llamaindex():
    code = ("import sys\nimport zeromem.integrations.llamaindex\n"
            "print(sorted(m for m in sys.modules if m.startswith('llama_index')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
