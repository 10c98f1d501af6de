"""The web inspector at `/` of `zeromem serve`, driven in a real headless Chromium.

A real `zeromem serve` subprocess serves a store filled here (the example LoCoMo conversation
for alice, one secret trace for bob); Debian's /usr/bin/chromium, driven by the python
playwright package (which downloads nothing), uses alice's key. Screenshots go to
$ZEROMEM_SCREENSHOTS (default: the test's tmp_path) for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zeromem import Memory

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    pytest.skip("the inspector test needs Debian's chromium at /usr/bin/chromium "
                "(apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api",
                               reason="the inspector test needs the python playwright package")
expect = sync_api.expect
TIMEOUT_MS = 15_000  # a loaded 2-core machine may take seconds for the first search
expect.set_options(timeout=TIMEOUT_MS)

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "locomo_moving_city.json"
# `python -m zeromem.interfaces.cli` would run cli.py as a second copy of the module (see test_mcp).
ENTRY = "from zeromem.interfaces.cli import main; main()"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
BOB_SECRET = "BOBSECRET the vault code is 9137"
LOOPBACK = "http://127.0.0.1:"
HOSTILE = '<img src=x onerror="window.__pwned=1"><b>not bold</b> & <script>window.__pwned=2</script>'


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True,
                          env=env, timeout=60, check=True)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A `zeromem serve` subprocess over a filled store: (base url, alice's key, bob's key, ids)."""
    import httpx

    folder = tmp_path_factory.mktemp("inspector")
    db = folder / "memory.db"
    with Memory(db, user="alice") as mem:
        mem.import_file(EXAMPLE)
        first = mem.list(session="session_1", limit=2)[1]
        mem.update(first.id, text=first.text + " Rye is next.")
        hostile = mem.add(HOSTILE, session="notes", speaker="Alice")
        gone = mem.add("A message that will be deleted.", session="notes", speaker="Alice")
        mem.delete(gone)
    with Memory(db, user="bob") as mem:
        bob_trace = mem.add(BOB_SECRET, session="bob-s1", speaker="Bob")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ZEROMEM_DB": str(db)}
    alice, bob = (json.loads(_cli("keys", "add", "--db", str(db), "--user", user, "--json", env=env).stdout)
                  ["key"] for user in ("alice", "bob"))
    port = _free_port()
    log = (folder / "serve.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, "serve", "--db", str(db), "--port", str(port),
                             "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"{LOOPBACK}{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"zeromem serve exited with {proc.returncode}:\n"
                            f"{(folder / 'serve.log').read_text()}")
            try:
                if httpx.get(base + "/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("zeromem serve was not ready within 60 s:\n" + (folder / "serve.log").read_text())
            time.sleep(0.2)
        yield {"base": base, "alice": alice, "bob": bob, "edited": first.id, "hostile": hostile,
               "gone": gone, "bob_trace": bob_trace}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    problems: list[str] = []

    def on_console(msg) -> None:
        # The API's refusals (400/401/404) are expected here; the browser logs each one.
        if msg.type == "error" and not re.search(r"status of 40[014]", msg.text):
            problems.append(f"console error: {msg.text}")

    def on_request(route) -> None:
        # Nothing may leave the loopback server: no CDN, no font, no analytics.
        if route.request.url.startswith(LOOPBACK):
            route.continue_()
        else:
            problems.append(f"request outside the server: {route.request.url}")
            route.abort()

    page.on("pageerror", lambda err: problems.append(f"page error: {err}"))
    page.on("console", on_console)
    page.route("**/*", on_request)
    yield page
    context.close()
    assert not problems, problems


@pytest.fixture()
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("ZEROMEM_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _connect(page, key: str) -> None:
    page.get_by_test_id("api-key").fill(key)
    page.get_by_test_id("connect").click()


def _query(page, text: str, k: int | None = None, budget: int | None = None) -> None:
    """Run a query and wait until both the evidence and the context answer this very query."""
    page.get_by_test_id("query-text").fill(text)
    if k is not None:
        page.get_by_test_id("query-k").fill(str(k))
    if budget is not None:
        page.get_by_test_id("query-budget").fill(str(budget))
    page.get_by_test_id("query-run").click()
    expect(page.get_by_test_id("evidence")).to_have_attribute("data-query", text)
    expect(page.get_by_test_id("context-text")).to_have_attribute("data-query", text)


def test_inspector_browse_graph_and_query(page, served, shots):
    page.goto(served["base"] + "/")
    expect(page).to_have_title("zeromem inspector")

    # bob first: his scope, his session; then alice's key replaces every panel.
    _connect(page, served["bob"])
    expect(page.get_by_test_id("scope")).to_contain_text("bob")
    expect(page.get_by_test_id("session")).to_have_count(1)
    page.get_by_test_id("session").first.click()
    expect(page.get_by_test_id("traces")).to_contain_text("BOBSECRET")

    _connect(page, served["alice"])
    scope = page.get_by_test_id("scope")
    expect(scope).to_contain_text("alice")
    expect(page.get_by_test_id("stat-traces")).to_contain_text("41")
    sessions = page.get_by_test_id("session")
    expect(sessions).to_have_count(4)
    expect(page.get_by_test_id("sessions")).to_contain_text("session_1")
    assert BOB_SECRET not in page.content()
    expect(page.get_by_test_id("traces")).to_be_empty()
    # the key is kept for this tab only (sessionStorage) unless "Remember" is ticked
    assert page.evaluate("sessionStorage.getItem('zeromem.inspector.apiKey')") == served["alice"]
    assert page.evaluate("localStorage.getItem('zeromem.inspector.apiKey')") is None

    # a session's traces with provenance; the edited trace shows both versions in its history
    page.locator('[data-testid="session"][data-session="session_1"]').click()
    expect(page.get_by_test_id("trace-item")).to_have_count(14)
    edited = served["edited"]
    page.locator(f'[data-testid="trace-item"][data-trace-id="{edited}"]').click()
    detail = page.get_by_test_id("trace-detail")
    expect(detail).to_contain_text("Rye is next.")
    expect(page.get_by_test_id("trace-provenance")).to_contain_text("D1:2")
    events = page.get_by_test_id("history-event")
    expect(events).to_have_count(2)
    expect(events.nth(0)).to_have_attribute("data-event", "add")
    expect(events.nth(1)).to_have_attribute("data-event", "update")
    expect(events.nth(1).locator("ins")).to_contain_text("Rye")
    page.screenshot(path=str(shots / "01-trace-history.png"), full_page=True)

    # the entity graph: Chicago links t3 to t18 (another session); clicking the neighbour opens it
    page.locator('[data-testid="trace-item"]', has_text="Still at the hospital in Chicago").click()
    expect(page.get_by_test_id("graph-svg")).to_be_visible()
    expect(page.locator('[data-testid="graph-entity"][data-entity="chicago"]')).to_have_count(1)
    expect(page.get_by_test_id("graph-entity-item").filter(has_text="Chicago")).to_contain_text("2 turns")
    neighbour = page.get_by_test_id("graph-neighbour-open").first
    expect(neighbour).to_be_visible()
    target = neighbour.get_attribute("data-trace-id")
    assert page.locator(f'[data-testid="graph-neighbour-node"][data-trace-id="{target}"]').count() == 1
    page.screenshot(path=str(shots / "02-trace-graph.png"), full_page=True)
    neighbour.click()
    expect(page.get_by_test_id("trace-provenance")).to_contain_text(target)
    expect(page.get_by_test_id("trace-text")).to_contain_text("Chicago")
    current_session = page.locator('[data-testid="session"][aria-current="true"]')
    expect(current_session).to_have_attribute("data-session", "session_2")
    current_trace = page.locator(f'[data-testid="trace-item"][data-trace-id="{target}"]')
    expect(current_trace).to_have_attribute("aria-current", "true")
    page.screenshot(path=str(shots / "03-neighbour-opened.png"), full_page=True)

    # trace text is data: markup in it is shown, never run
    page.locator('[data-testid="session"][data-session="notes"]').click()
    page.locator(f'[data-testid="trace-item"][data-trace-id="{served["hostile"]}"]').click()
    expect(page.get_by_test_id("trace-text")).to_have_text(HOSTILE)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#trace-detail img, #trace-detail b, #traces img, #traces script").count() == 0

    # a deleted trace: its history (add, delete) remains; bob's id is not found in alice's scope
    page.get_by_test_id("goto-id").fill(served["gone"])
    page.get_by_test_id("goto-id").press("Enter")
    expect(page.get_by_test_id("trace-deleted")).to_be_visible()
    expect(page.get_by_test_id("history-event")).to_have_count(2)
    expect(page.get_by_test_id("history-event").nth(1)).to_have_attribute("data-event", "delete")
    page.get_by_test_id("goto-id").fill(served["bob_trace"])
    page.get_by_test_id("goto-id").press("Enter")
    expect(page.get_by_test_id("browse-error")).to_contain_text("NotFound")
    assert BOB_SECRET not in page.content()

    # query: evidence with rank, score, provenance and why bars; route, timings; the rendered context
    page.get_by_test_id("tab-query").click()
    _query(page, "Where did Priya live before she moved to Denver?", k=5, budget=400)
    items = page.get_by_test_id("evidence-item")
    assert 1 <= items.count() <= 5
    first = items.first
    expect(first).to_contain_text("#1")
    expect(first.get_by_test_id("ev-provenance")).to_contain_text("session_")
    for signal in ["ppr", "h_turn", "dense_cosine", "compatibility"]:
        expect(first.locator(f'[data-testid="why-bar"][data-signal="{signal}"]')).to_have_count(1)
    expect(first.get_by_test_id("why-reason")).not_to_be_empty()
    expect(page.get_by_test_id("route")).not_to_be_empty()
    expect(page.get_by_test_id("no-answer")).to_have_text(re.compile(r"^\d\.\d+$"))
    expect(page.get_by_test_id("timings")).to_contain_text("ms")
    expect(page.get_by_test_id("context-text")).to_contain_text("Priya")
    expect(page.get_by_test_id("context-tokens")).to_contain_text("token")
    tokens = int(page.get_by_test_id("context-tokens").inner_text().split()[0].replace(",", ""))
    assert 0 < tokens <= 400
    page.screenshot(path=str(shots / "04-query.png"), full_page=True)

    # bob's secret is not found from alice's scope, however directly asked for
    _query(page, "vault code 9137 BOBSECRET")
    assert BOB_SECRET not in page.content()

    # clicking a provenance id opens the trace in Browse
    _query(page, "What is the name of Marcus's cat?")
    trace_id = items.first.locator("button[data-trace-id]").first.get_attribute("data-trace-id")
    items.first.locator("button[data-trace-id]").first.click()
    expect(page.get_by_test_id("trace-provenance")).to_contain_text(trace_id)

    # the key survives a reload of the tab (sessionStorage) and reconnects on its own
    page.reload()
    expect(page.get_by_test_id("scope")).to_contain_text("alice")
    expect(page.get_by_test_id("session")).to_have_count(4)
    assert BOB_SECRET not in page.content()


def test_inspector_shows_api_errors(page, served, shots):
    page.goto(served["base"] + "/")
    _connect(page, "zm_00000000_" + "x" * 43)
    error = page.get_by_test_id("global-error")
    expect(error).to_be_visible()
    expect(error).to_contain_text("Unauthorized")
    expect(error).to_contain_text("invalid, unknown or revoked API key")
    expect(page.get_by_test_id("session")).to_have_count(0)
    page.screenshot(path=str(shots / "05-bad-key.png"), full_page=True)

    _connect(page, served["alice"])
    expect(page.get_by_test_id("scope")).to_contain_text("alice")
    expect(error).to_be_hidden()
    page.get_by_test_id("tab-query").click()
    page.get_by_test_id("query-text").fill("   ")  # passes `required`, refused by the server
    page.get_by_test_id("query-run").click()
    query_error = page.get_by_test_id("query-error")
    expect(query_error).to_contain_text("InvalidInput")
    expect(query_error).to_contain_text("query is empty")
    page.screenshot(path=str(shots / "06-query-error.png"), full_page=True)


def test_inspector_remembers_the_key_only_when_asked(browser, served):
    context = browser.new_context()
    try:
        page = context.new_page()
        page.goto(served["base"] + "/")
        _connect(page, served["alice"])
        expect(page.get_by_test_id("scope")).to_contain_text("alice")
        other = context.new_page()  # a new tab: sessionStorage is per tab
        other.goto(served["base"] + "/")
        expect(other.get_by_test_id("scope")).to_contain_text("not connected")
        assert other.get_by_test_id("api-key").input_value() == ""

        page.get_by_test_id("key-remember").check()
        _connect(page, served["alice"])
        expect(page.get_by_test_id("scope")).to_contain_text("alice")
        assert page.evaluate("localStorage.getItem('zeromem.inspector.apiKey')") == served["alice"]
        third = context.new_page()
        third.goto(served["base"] + "/")
        expect(third.get_by_test_id("scope")).to_contain_text("alice")
        expect(third.get_by_test_id("key-remember")).to_be_checked()
        third.locator("#key-forget").click()
        assert third.evaluate("localStorage.getItem('zeromem.inspector.apiKey')") is None
    finally:
        context.close()


def test_a_web_page_elsewhere_cannot_write_frame_or_rebind(browser, served, tmp_path):
    """A --no-auth server, the case where a key stops nothing: a page from another site posts
    a multipart upload (a CORS "simple request") and frames the inspector; both are refused."""
    import httpx

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    db = tmp_path / "open.db"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, "serve", "--db", str(db), "--port", str(port),
                             "--no-auth", "--user", "me"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, env=env)
    base = f"{LOOPBACK}{port}"
    context = browser.new_context()
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, "zeromem serve --no-auth exited"
            try:
                if httpx.get(base + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "zeromem serve --no-auth was not up within 60 s"
            time.sleep(0.2)
        evil = f"""<!doctype html><title>evil</title>
<iframe id="frame" src="{base}/"></iframe>
<script>
  const form = new FormData();
  form.append('file', new Blob(['{{"text": "planted by evil"}}\\n']), 'x.jsonl');
  window.sent = fetch('{base}/v1/import', {{method: 'POST', mode: 'no-cors', body: form}})
    .then(() => 'sent', (e) => 'failed ' + e);
</script>"""
        page = context.new_page()
        page.route("http://evil.example/**", lambda route: route.fulfill(status=200, body=evil,
                                                                          content_type="text/html"))
        page.goto("http://evil.example/")
        assert page.evaluate("window.sent") in ("sent", "failed TypeError: Failed to fetch")
        page.wait_for_timeout(500)
        frame = next(f for f in page.frames if f != page.main_frame)
        assert not frame.url.startswith(base), frame.url  # X-Frame-Options / frame-ancestors
        listed = httpx.get(base + "/v1/traces").json()["traces"]
        assert listed == []  # the upload was refused with 403
        rebound = httpx.get(base + "/v1/traces", headers={"Host": f"evil.example:{port}"})
        assert rebound.status_code == 421
    finally:
        context.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
