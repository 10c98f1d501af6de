"""OpenTelemetry spans around Memory's operations and the server's requests (zeromem.tracing).

The spans go to an SDK ``TracerProvider`` handed to ``tracing.enable`` (OpenTelemetry's global
provider can be set once per process, and pytest-xdist runs many modules in one): an
``InMemorySpanExporter`` collects them. What needs the global provider or the environment runs
in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from zeromem import Config, Memory, tracing
from zeromem.config import EncoderConfig
from zeromem.errors import InvalidInput, ModelUnavailable, NotFound
from zeromem.interfaces.server import ServerSettings, create_app
from zeromem.reader import usage

pytestmark = pytest.mark.slow  # real models (one Memory for the module)

USER = "ana-secret-user"
TEXT = "I moved to Denver last week with my cat Miso."
QUERY = "Where did I move?"
SPAN_ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    mem = Memory(tmp_path_factory.mktemp("tracing") / "m.db", user=USER, config=Config(index_on_write=True))
    yield mem
    mem.close()


@pytest.fixture
def spans():
    """Tracing on for one test, into an in-memory exporter; off again afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    yield exporter
    tracing.disable()
    provider.shutdown()


def _by_name(exporter):
    found = {}
    for span in exporter.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


def _strings(span) -> list[str]:
    values = [*span.attributes.values(), span.name, span.status.description or ""]
    for event in span.events:
        values.extend(event.attributes.values())
    return [str(v) for value in values for v in (value if isinstance(value, tuple) else (value,))]


def test_memory_operations_open_spans_with_numbers_and_no_text(memory, spans):
    before = usage()
    tid = memory.add(TEXT, speaker="Ana", session="s1")
    ids = memory.add_many([{"text": "Nice! How is Denver?", "speaker": "Bo", "session": "s1"},
                           {"text": "Cold, but Miso loves the snow.", "speaker": "Ana", "session": "s1"}])
    evidence = memory.search(QUERY, k=3)
    memory.render_context(QUERY, k=3, budget_tokens=500)
    memory.index()
    memory.update(ids[0], text="Nice! How is the new flat?")
    memory.delete(ids[1])
    spent = usage() - before
    assert (spent.calls, spent.tokens) == (0, 0)  # tracing calls no language model

    found = _by_name(spans)
    assert set(found) == {"zeromem.add", "zeromem.add_many", "zeromem.search", "zeromem.render_context",
                          "zeromem.index", "zeromem.update", "zeromem.delete"}
    assert found["zeromem.add"][0].attributes["zeromem.traces.written"] == 1
    assert found["zeromem.add_many"][0].attributes["zeromem.traces.written"] == 2
    assert found["zeromem.update"][0].attributes["zeromem.traces.written"] == 1
    assert found["zeromem.delete"][0].attributes["zeromem.traces.deleted"] == 1

    search, nested = found["zeromem.search"]  # search, then the one inside render_context
    attributes = search.attributes
    assert attributes["zeromem.k"] == 3 and attributes["zeromem.evidence.count"] == len(evidence)
    assert attributes["zeromem.scope.has_user"] is True and attributes["zeromem.scope.has_agent"] is False
    assert attributes["zeromem.degraded"] is False and attributes["zeromem.route"] in ("local", "relational")
    assert {"zeromem.timing.encode_ms", "zeromem.timing.retrieve_ms", "zeromem.timing.total_ms"} <= set(attributes)
    assert attributes["zeromem.timing.total_ms"] >= 0
    render = found["zeromem.render_context"][0]
    assert nested.parent is not None and nested.parent.span_id == render.context.span_id
    assert render.attributes["zeromem.budget_tokens"] == 500 and render.attributes["zeromem.tokens"] > 0
    assert found["zeromem.index"][0].attributes["zeromem.index.sessions"] >= 0

    every = [text for span in spans.get_finished_spans() for text in _strings(span)]
    for secret in (USER, "Denver", "Miso", "move", "s1", tid, *ids):
        assert not any(secret in text for text in every), secret
    assert all(span.status.status_code is StatusCode.UNSET for span in spans.get_finished_spans())


def test_a_failing_call_sets_error_status_and_records_only_the_exception_type(memory, spans):
    with pytest.raises(NotFound):
        memory.update("t00000000", text="x")
    with pytest.raises(InvalidInput):
        memory.add_many("not a list")
    update, add_many = spans.get_finished_spans()
    for span, kind in ((update, "NotFound"), (add_many, "InvalidInput")):
        assert span.status.status_code is StatusCode.ERROR and span.status.description == kind
        assert span.attributes["error.type"] == kind
        [event] = span.events
        assert event.name == "exception" and dict(event.attributes) == {
            "exception.type": kind, "exception.escaped": True}
    assert not any(USER in text for text in _strings(update))  # NotFound's message names the scope


def test_a_degraded_search_names_the_failed_component_not_why(tmp_path, spans):
    missing_model = tmp_path / "no-such-model"
    with Memory(tmp_path / "d.db", config=Config(encoders=EncoderConfig(embedding_model=str(missing_model)))) as mem:
        mem.add(TEXT, speaker="Ana", session="s1")
        result = mem.search_detailed(QUERY)
    assert result.degraded  # answered without the embedder
    [search] = _by_name(spans)["zeromem.search"]
    assert search.attributes["zeromem.degraded"] is True
    assert search.attributes["zeromem.degraded.components"] == ("embedder",)
    assert not any(str(missing_model) in text for text in _strings(search))


def test_exception_details_are_recorded_when_asked(memory, spans):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider, exception_details=True)
    with pytest.raises(NotFound):
        memory.update("t00000000", text="x")
    [span] = exporter.get_finished_spans()
    [event] = span.events
    assert event.attributes["exception.type"].endswith("NotFound")
    assert "t00000000" in event.attributes["exception.message"] and event.attributes["exception.stacktrace"]
    with pytest.raises(InvalidInput, match="exception_details"):
        tracing.enable(exception_details="yes")


def test_disabled_tracing_records_nothing(memory, spans):
    tracing.disable()
    assert not tracing.enabled()
    memory.search(QUERY)
    assert spans.get_finished_spans() == ()


def test_server_requests_are_spans_with_the_memory_spans_inside(memory, spans):
    app = create_app(memory, ServerSettings(warm_up=False, require_auth=False, user=USER))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.post("/v1/search", json={"query": QUERY, "k": 2}).status_code == 200
        assert client.get("/v1/traces/t00000000").status_code == 404
        assert client.get("/v1/sessions/s1/nothing-here-at-all").status_code in (404, 405)
    found = _by_name(spans)
    [request] = found["POST /v1/search"]
    assert request.kind is SpanKind.SERVER and request.status.status_code is StatusCode.UNSET
    assert request.attributes["http.route"] == "/v1/search"
    assert request.attributes["http.response.status_code"] == 200
    assert request.attributes["http.request.method"] == "POST"
    assert {"zeromem.server.auth_ms", "zeromem.server.search_ms", "zeromem.server.app_ms"} <= set(request.attributes)
    [search] = found["zeromem.search"]
    assert search.parent.span_id == request.context.span_id and search.attributes["zeromem.k"] == 2
    [missing] = found["GET /v1/traces/{trace_id}"]
    assert missing.attributes["http.response.status_code"] == 404
    assert missing.status.status_code is StatusCode.UNSET  # a client error is not the server's
    every = [text for span in spans.get_finished_spans() for text in _strings(span)]
    assert not any("t00000000" in text or USER in text or "Where" in text for text in every)
    assert all(span.kind is SpanKind.SERVER for name, group in found.items()
               if not name.startswith("zeromem.") for span in group)


def test_an_app_made_while_tracing_is_off_has_no_span_middleware(memory):
    tracing.disable()
    app = create_app(memory, ServerSettings(warm_up=False, require_auth=False, user=USER))
    assert "ServerSpans" not in [middleware.cls.__name__ for middleware in app.user_middleware]


def test_missing_opentelemetry_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # import opentelemetry → ImportError
    with pytest.raises(ModelUnavailable, match=r"pip install 'zeromem\[otel\]'"):
        tracing.enable()
    assert not tracing.enabled()


def _run(code: str, **env: str) -> dict:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            env={**SPAN_ENV, **env}, timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_tracing_off_never_imports_opentelemetry():
    report = _run("""
        import json, sys
        import zeromem
        mem = zeromem.Memory(":memory:")
        mem.add("I moved to Denver.", session="s1")
        mem.search("Where did I move?")
        print(json.dumps({"loaded": sorted(m for m in sys.modules if m.startswith("opentelemetry")),
                          "enabled": zeromem.tracing.enabled()}))
    """, ZEROMEM_OTEL="0")
    assert report == {"loaded": [], "enabled": False}


def test_zeromem_otel_1_traces_into_the_global_provider_with_one_server_span_per_request():
    # The global provider: what `opentelemetry-instrument` or an application sets. FastAPI
    # (0.165+) would trace requests into it too; zeromem's app leaves that to its own spans.
    report = _run("""
        import json
        from fastapi.testclient import TestClient
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import zeromem
        from zeromem.interfaces.server import ServerSettings, create_app
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        mem = zeromem.Memory(":memory:", config=zeromem.Config(index_on_write=False))
        app = create_app(mem, ServerSettings(warm_up=False, require_auth=False, user="u"))
        with TestClient(app, base_url="http://127.0.0.1") as client:
            client.post("/v1/traces", json={"text": "hello", "session": "s"})
        print(json.dumps({"enabled": zeromem.tracing.enabled(),
                          "spans": sorted([s.name, s.kind.name] for s in exporter.get_finished_spans())}))
    """, ZEROMEM_OTEL="1")
    assert report == {"enabled": True, "spans": [["POST /v1/traces", "SERVER"], ["zeromem.add", "INTERNAL"]]}


def test_a_bad_zeromem_otel_value_is_refused():
    result = subprocess.run([sys.executable, "-c", "import zeromem; zeromem.Memory(':memory:').add('x')"],
                            capture_output=True, text=True, env={**SPAN_ENV, "ZEROMEM_OTEL": "maybe"},
                            timeout=120)
    assert result.returncode != 0 and "ZEROMEM_OTEL must be 1" in result.stderr
