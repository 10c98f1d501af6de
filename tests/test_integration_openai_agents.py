"""The OpenAI Agents SDK adapter: ZeromemSession under the SDK's own Runner, the recall and
remember tools, item round trips, erasure, scope isolation and the missing-extra message.

The model is a scripted ``agents.models.interface.Model`` (the SDK's own kind): it returns
prepared outputs and records the input the Runner gave it. Tracing is disabled and sockets
refuse to connect, so nothing leaves the process; zeromem's LLM-call counter stays at 0.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, set_tracing_disabled
from agents.items import ModelResponse
from agents.memory import Session
from agents.models.interface import Model
from agents.tool_context import ToolContext
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from zeromem import InvalidInput, Memory
from zeromem.integrations import openai_agents
from zeromem.integrations.openai_agents import (
    ITEM_KEY,
    ZeromemSession,
    item_role,
    item_text,
    recall,
    recall_tool,
    remember_tool,
)
from zeromem.interfaces import extras
from zeromem.interfaces.extras import MissingExtra
from zeromem.reader import usage

set_tracing_disabled(True)  # the SDK would otherwise export traces to OpenAI
NO_TRACING = RunConfig(tracing_disabled=True)


@pytest.fixture(autouse=True)
def _offline(no_network):
    """Every test here runs without network (conftest.no_network)."""


@pytest.fixture
def memory(tmp_path):
    mem = Memory(tmp_path / "agents.db", user="ana")
    yield mem
    mem.close()


def run(coro):
    return asyncio.run(coro)


# -- a scripted model of the SDK's own kind ---------------------------------------------------
class ScriptedModel(Model):
    """Returns one prepared list of output items per call, in order; keeps every input."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = list(turns)
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema,
                           handoffs, tracing, *, previous_response_id, conversation_id, prompt):
        self.inputs.append(json.loads(json.dumps(input)))  # a snapshot, as sent
        return ModelResponse(output=self.turns.pop(0), usage=Usage(), response_id=None)

    async def stream_response(self, system_instructions, input, model_settings, tools, output_schema,
                              handoffs, tracing, *, previous_response_id, conversation_id,
                              prompt) -> AsyncIterator[Any]:
        self.inputs.append(json.loads(json.dumps(input)))
        response = Response(id="scripted", created_at=0, model="scripted", object="response",
                            output=self.turns.pop(0), tool_choice="auto", tools=[], top_p=None,
                            parallel_tool_calls=False, status="completed")
        yield ResponseCompletedEvent(type="response.completed", response=response, sequence_number=0)


def say(text: str, msg_id: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id=msg_id, type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


def call(name: str, arguments: dict, call_id: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(type="function_call", id=f"fc_{call_id}", call_id=call_id, name=name,
                                    arguments=json.dumps(arguments), status="completed")


def invoke(tool, arguments: dict) -> str:
    """Run a FunctionTool the way the Runner does, with a ToolContext of its own."""
    args = json.dumps(arguments)
    ctx = ToolContext(context=None, tool_name=tool.name, tool_call_id="call-1", tool_arguments=args)
    return run(tool.on_invoke_tool(ctx, args))


# -- the Runner ----------------------------------------------------------------------------------
def test_runner_keeps_the_run_in_the_session_and_the_recall_tool_cites_stored_traces(memory):
    before = usage()
    assert isinstance(ZeromemSession("x", memory), Session)  # the SDK's runtime-checkable protocol

    # Run 1, an earlier conversation: the user says a fact, the model answers.
    first = ZeromemSession("monday", memory, speakers={"user": "Ana"})
    model = ScriptedModel([[say("Miso is a lovely name for a cat!", "m1")]])
    agent = Agent(name="helper", instructions="Be brief.", model=model)
    result = run(Runner.run(agent, "I adopted a cat and called her Miso.", session=first,
                            run_config=NO_TRACING))
    assert result.final_output == "Miso is a lovely name for a cat!"
    stored = memory.list(session="monday")
    assert [(t.role, t.speaker, t.text) for t in stored] == [
        ("user", "Ana", "I adopted a cat and called her Miso."),
        ("assistant", None, "Miso is a lovely name for a cat!")]
    fact_id = stored[0].id

    # Run 2, a new conversation: the model calls the recall tool, then answers from its output.
    second = ZeromemSession("tuesday", memory, speakers={"user": "Ana"})
    tool = recall_tool(memory, k=3, exclude_session="tuesday")
    model = ScriptedModel([[call("recall", {"query": "What is the name of my cat?"}, "c1")],
                           [say("Your cat is called Miso.", "m2")]])
    agent = Agent(name="helper", instructions="Use recall.", model=model, tools=[tool])
    result = run(Runner.run(agent, "What is my cat called?", session=second, run_config=NO_TRACING))
    assert result.final_output == "Your cat is called Miso."

    items = run(second.get_items())
    assert [item.get("type", "message") for item in items] == [
        "message", "function_call", "function_call_output", "message"]
    assert items[0] == {"role": "user", "content": "What is my cat called?"}
    assert items[1]["name"] == "recall" and items[1]["call_id"] == "c1"
    assert items[2]["call_id"] == "c1"
    assert items[3]["content"][0]["text"] == "Your cat is called Miso."
    traces = memory.list(session="tuesday")
    assert [t.role for t in traces] == ["user", "assistant", "tool", "assistant"]
    assert traces[1].text == 'recall({"query": "What is the name of my cat?"})'
    assert [t.seq for t in traces] == sorted(t.seq for t in traces)

    # The tool's output (what the model read) cites the stored fact with its provenance.
    output = json.loads(items[2]["output"])
    assert output["query"] == "What is the name of my cat?"
    cited = {ev["trace_id"]: ev for ev in output["evidence"]}
    assert fact_id in cited
    assert cited[fact_id] | {"score": None} == {
        "trace_id": fact_id, "session": "monday", "speaker": "Ana", "time": stored[0].event_time,
        "score": None, "text": "I adopted a cat and called her Miso."}
    assert stored[0].event_time is not None
    assert all(ev["session"] != "tuesday" for ev in output["evidence"])  # exclude_session
    # The second model call saw the tool output, from the session's own history.
    assert model.inputs[1][-1]["type"] == "function_call_output"

    # Run 3, same session: the model's input starts with everything the session holds.
    model = ScriptedModel([[say("You're welcome.", "m3")]])
    agent = Agent(name="helper", instructions="Be brief.", model=model)
    run(Runner.run(agent, "Thanks!", session=second, run_config=NO_TRACING))
    seen = model.inputs[0]
    assert seen[:4] == items and seen[4] == {"role": "user", "content": "Thanks!"}
    assert len(run(second.get_items())) == 6

    assert usage() - before == type(before)()  # zero LLM calls from zeromem


def test_a_streamed_run_is_kept_the_same_way(memory):
    session = ZeromemSession("streamed", memory)
    model = ScriptedModel([[say("Streamed answer.", "m1")]])
    agent = Agent(name="helper", instructions="Be brief.", model=model)

    async def main():
        result = Runner.run_streamed(agent, "Stream please.", session=session, run_config=NO_TRACING)
        async for _ in result.stream_events():
            pass
        return result.final_output

    assert run(main()) == "Streamed answer."
    items = run(session.get_items())
    assert items[0] == {"role": "user", "content": "Stream please."}
    assert items[1]["content"][0]["text"] == "Streamed answer."


def test_session_settings_limit_bounds_what_the_next_run_sees(memory):
    session = ZeromemSession("limited", memory, session_settings={"limit": 2})
    run(session.add_items([{"role": "user", "content": f"note {i}"} for i in range(5)]))
    model = ScriptedModel([[say("ok", "m1")]])
    run(Runner.run(Agent(name="a", model=model), "next", session=session, run_config=NO_TRACING))
    assert model.inputs[0] == [{"role": "user", "content": "note 3"}, {"role": "user", "content": "note 4"},
                               {"role": "user", "content": "next"}]
    assert len(run(session.get_items(limit=None))) == 2  # the settings' limit applies to get_items()
    assert len(memory.list(session="limited")) == 7


# -- items ↔ traces ------------------------------------------------------------------------------
ITEMS: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer in French."},
    {"role": "user", "content": "Bonjour"},
    {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "What is in this picture?"},
        {"type": "input_image", "image_url": "https://example.com/cat.png", "detail": "auto"}]},
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "The user wants a name."}]},
    {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "lookup", "arguments": '{"city": "Lyon"}',
     "status": "completed"},
    {"type": "function_call_output", "call_id": "c1", "output": "Lyon: 12°C, rain"},
    {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "part one"},
                                                                   {"type": "input_text", "text": "part two"}]},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "weather in Lyon"}},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [
        {"type": "output_text", "text": "Il pleut à Lyon.", "annotations": [], "logprobs": []}]},
    {"role": "assistant", "content": "   "},
    {"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I can't help with that."}]},
    {"type": "item_reference", "id": "msg_0"},
    {"type": "computer_call_output", "call_id": "cc1",
     "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgo="}},
]


def test_every_kind_of_item_round_trips_exactly_in_order(memory):
    session = ZeromemSession("kinds", memory)
    run(session.add_items(ITEMS))
    assert run(session.get_items()) == ITEMS
    assert run(session.get_items(limit=3)) == ITEMS[-3:]
    assert run(session.get_items(limit=100)) == ITEMS
    assert run(session.get_items(limit=0)) == []
    traces = memory.list(session="kinds")
    assert [(t.role, t.text) for t in traces] == [
        ("system", "Answer in French."),
        ("user", "Bonjour"),
        ("user", "What is in this picture?\n[image]"),
        ("assistant", "[reasoning]"),
        ("assistant", "The user wants a name."),
        ("assistant", 'lookup({"city": "Lyon"})'),
        ("tool", "Lyon: 12°C, rain"),
        ("tool", "part one\npart two"),
        ("assistant", '[web_search_call] {"action":{"query":"weather in Lyon","type":"search"}}'),
        ("assistant", "Il pleut à Lyon."),
        ("assistant", "[empty assistant message]"),
        ("assistant", "I can't help with that."),
        ("assistant", "[item_reference]"),
        ("tool", '[computer_call_output] {"output":{"image_url":"[inline data]","type":"computer_screenshot"}}'),
    ]
    # A text field the trace already holds is not stored twice.
    assert "content" not in traces[1].metadata[ITEM_KEY] and "output" not in traces[6].metadata[ITEM_KEY]
    assert [item_role(i) for i in ITEMS] == [t.role for t in traces]
    assert [item_text(i) for i in ITEMS] == [t.text for t in traces]
    # Items are searchable like any trace.
    assert memory.search("rain in Lyon", k=3)[0].text in ("Lyon: 12°C, rain", "Il pleut à Lyon.")


def test_a_long_tool_output_is_stored_once_and_round_trips(memory):
    session = ZeromemSession("long", memory)
    big = {"type": "function_call_output", "call_id": "c9", "output": "word " * 16_000}  # 80 000 chars
    run(session.add_items([big]))
    assert run(session.get_items()) == [big]


def test_bad_items_are_refused_whole_with_a_clear_error(memory):
    session = ZeromemSession("strict", memory)
    good = {"role": "user", "content": "kept only with its batch"}
    with pytest.raises(InvalidInput, match=r"item #1 must be a dict"):
        run(session.add_items([good, "not an item"]))
    image = {"type": "input_image", "image_url": "data:image/png;base64," + "A" * 70_000}
    inline = {"role": "user", "content": [image]}
    with pytest.raises(InvalidInput, match=r"item #1 \(message\) is \d+ bytes .*\(64 KiB\)"):
        run(session.add_items([good, inline]))
    with pytest.raises(InvalidInput, match="JSON"):
        run(session.add_items([good, {"type": "function_call", "name": "f", "arguments": "{}", "x": float("nan")}]))
    with pytest.raises(InvalidInput, match="list of items"):
        run(session.add_items(good))  # type: ignore[arg-type]
    assert memory.list(session="strict") == []  # nothing of any refused batch was stored
    for limit in (-1, 1.5, True):
        with pytest.raises(InvalidInput, match="limit"):
            run(session.get_items(limit=limit))  # type: ignore[arg-type]
    for bad in ("", "  ", None, 3):
        with pytest.raises(InvalidInput, match="session_id"):
            ZeromemSession(bad, memory)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="memory must be a zeromem Memory"):
        ZeromemSession("s", "memory.db")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="speakers"):
        ZeromemSession("s", memory, speakers={"human": "Ana"})
    with pytest.raises(InvalidInput, match="session_settings"):
        ZeromemSession("s", memory, session_settings={"limit": "many"})
    run(session.add_items([]))  # an empty batch is fine and stores nothing
    assert memory.list(session="strict") == []
    # Under the Runner: an input the session cannot keep stops the run before the model is called.
    model = ScriptedModel([[say("never sent", "m1")]])
    with pytest.raises(InvalidInput, match="64 KiB"):
        run(Runner.run(Agent(name="a", model=model), [inline], session=session, run_config=NO_TRACING))
    assert model.inputs == [] and memory.list(session="strict") == []


def test_traces_written_by_other_means_read_as_plain_messages(memory):
    session = ZeromemSession("mixed", memory)
    memory.add("Imported user turn.", session="mixed", role="user")
    memory.add("Imported tool result.", session="mixed", role="tool")
    run(session.add_items([{"role": "user", "content": "From the SDK."}]))
    assert run(session.get_items()) == [{"role": "user", "content": "Imported user turn."},
                                        {"role": "assistant", "content": "Imported tool result."},
                                        {"role": "user", "content": "From the SDK."}]


# -- pop, clear, scopes --------------------------------------------------------------------------
def test_pop_item_and_clear_session_erase_only_this_session(memory):
    session = ZeromemSession("chat", memory)
    other = ZeromemSession("other", memory)
    bob = ZeromemSession("chat", memory, user="bob")  # the same session name in another scope
    run(session.add_items(ITEMS[:3]))
    run(other.add_items([{"role": "user", "content": "Keep me."}]))
    run(bob.add_items([{"role": "user", "content": "Bob's turn."}]))

    assert run(session.pop_item()) == ITEMS[2]
    assert run(session.get_items()) == ITEMS[:2]
    popped_text = "What is in this picture?"
    assert all(popped_text not in t.text for t in memory.list())
    assert all(popped_text not in (e.old_text or "") for t in memory.list() for e in memory.history(t.id))
    run(session.add_items([ITEMS[5]]))  # the next item goes after the remaining ones
    assert run(session.get_items()) == [*ITEMS[:2], ITEMS[5]]

    run(session.clear_session())
    assert run(session.get_items()) == []
    assert run(session.pop_item()) is None
    run(session.clear_session())  # clearing an empty session is fine
    assert run(other.get_items()) == [{"role": "user", "content": "Keep me."}]
    assert run(bob.get_items()) == [{"role": "user", "content": "Bob's turn."}]
    assert [t.text for t in memory.list(user="bob")] == ["Bob's turn."]
    assert [t.text for t in memory.list()] == ["Keep me."]


def test_concurrent_writers_keep_every_item_in_one_order(memory):
    session = ZeromemSession("busy", memory)

    async def main():
        await asyncio.gather(*(session.add_items([{"role": "user", "content": f"batch {b} item {i}"}
                                                   for i in range(3)]) for b in range(4)))
        return await session.get_items()

    items = run(main())
    assert len(items) == 12
    for b in range(4):  # each batch is contiguous and in its own order
        texts = [item["content"] for item in items]
        start = texts.index(f"batch {b} item 0")
        assert texts[start:start + 3] == [f"batch {b} item {i}" for i in range(3)]
    assert run(session.pop_item()) == items[-1]


# -- tools ---------------------------------------------------------------------------------------
def test_recall_tool_returns_evidence_with_provenance_and_reports_bad_queries(memory):
    ids = memory.add_many([
        {"text": "I moved to Lisbon in March.", "session": "s1", "speaker": "Ana", "role": "user",
         "event_time": "2024-03-02T10:00:00Z"},
        {"text": "Lisbon is beautiful in spring.", "session": "s1", "role": "assistant"},
    ])
    memory.add("Where do I live now?", session="current", role="user")
    memory.add("I live in Oslo.", user="bob", session="s1")  # another scope: never returned
    tool = recall_tool(memory, k=2, exclude_session="current")
    assert tool.name == "recall" and tool.params_json_schema["required"] == ["query"]
    out = json.loads(invoke(tool, {"query": "Where does Ana live?"}))
    first = out["evidence"][0]
    assert first["trace_id"] == ids[0]
    assert first == {"trace_id": ids[0], "session": "s1", "speaker": "Ana", "time": "2024-03-02T10:00:00+00:00",
                     "score": first["score"], "text": "I moved to Lisbon in March."}
    assert len(out["evidence"]) == 2 and all(ev["session"] == "s1" for ev in out["evidence"])
    assert json.loads(recall(memory, "Where does Ana live?", k=2, exclude_session="current")) == out
    # a bad query goes back to the model as a tool error, not an exception in the run
    message = invoke(tool, {"query": "   "})
    assert message.startswith("The call was refused: query is empty")
    only = recall_tool(memory, k=5, session="current", name="recall_current")
    assert [ev["session"] for ev in json.loads(invoke(only, {"query": "live"}))["evidence"]] == ["current"]
    with pytest.raises(InvalidInput, match="k must be a positive int"):
        recall_tool(memory, k=0)


def test_remember_tool_stores_a_note_in_scope(memory):
    tool = remember_tool(memory, session="notes", speaker="helper")
    out = json.loads(invoke(tool, {"text": "Ana prefers window seats."}))
    trace = memory.get(out["trace_id"])
    assert (trace.text, trace.session, trace.speaker, trace.role) == (
        "Ana prefers window seats.", "notes", "helper", "assistant")
    assert trace.user == "ana" and trace.event_time is not None
    assert invoke(tool, {"text": ""}).startswith("The call was refused: trace #0: text is empty")


# -- the extra ------------------------------------------------------------------------------------
def test_a_missing_agents_extra_says_how_to_install_it(monkeypatch, memory):
    modules, purpose = extras.EXTRAS["agents"]
    monkeypatch.setitem(extras.EXTRAS, "agents", (("zeromem_no_such_module", *modules), purpose))
    for make in (lambda: ZeromemSession("s", memory), lambda: recall_tool(memory),
                 lambda: remember_tool(memory)):
        with pytest.raises(MissingExtra, match=r"pip install 'zeromem\[agents\]'") as err:
            make()
        assert "zeromem_no_such_module" in str(err.value)
    assert openai_agents.item_text({"role": "user", "content": "hi"}) == "hi"  # pure helpers need no SDK


def test_importing_the_adapter_does_not_import_the_sdk():
    code = ("import sys\nimport zeromem.integrations.openai_agents\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'openai')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
