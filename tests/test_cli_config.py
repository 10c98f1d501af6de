"""One configuration path: every ``Config`` field can be set for ``zeromem serve`` and
``zeromem mcp`` by a flag, a ``ZEROMEM_<FIELD>`` variable or ``--config FILE`` (flag > variable
> file > default), and the server's workers get exactly that Config."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from zeromem import Config, InvalidInput
from zeromem.config import env_name, field_names
from zeromem.interfaces.cli import app as cli
from zeromem.interfaces.cli_common import load_config

LOCAL = "http://127.0.0.1"


@pytest.fixture(autouse=True)
def _no_config_from_the_environment(monkeypatch):
    for name in field_names():
        monkeypatch.delenv(env_name(name), raising=False)
    monkeypatch.delenv("ZEROMEM_CONFIG", raising=False)


def _write_toml(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_precedence_is_flag_then_environment_then_file_then_default(tmp_path, monkeypatch):
    file = _write_toml(tmp_path / "zeromem.toml", "index_cache_mb = 100\nlock_timeout_s = 7\n"
                       "[retrieval]\nppr_damping = 0.3\nuse_graph = false\n"
                       "[encoders]\nmax_encoded_chars = 500\n")
    from_file = load_config(file, None)
    assert (from_file.index_cache_mb, from_file.lock_timeout_s, from_file.retrieval.ppr_damping,
            from_file.retrieval.use_graph, from_file.encoders.max_encoded_chars) == (100, 7, 0.3, False, 500)
    assert from_file.retrieval.top_k_primary == Config().retrieval.top_k_primary  # not in the file: default

    monkeypatch.setenv("ZEROMEM_INDEX_CACHE_MB", "200")
    monkeypatch.setenv("ZEROMEM_RETRIEVAL_PPR_DAMPING", "0.4")
    monkeypatch.setenv("ZEROMEM_ENCODERS_MAX_ENCODED_CHARS", "none")
    with_env = load_config(file, None)
    assert (with_env.index_cache_mb, with_env.retrieval.ppr_damping, with_env.encoders.max_encoded_chars,
            with_env.lock_timeout_s) == (200, 0.4, None, 7)

    flagged = load_config(file, ["retrieval.ppr_damping=0.5"], index_cache_mb=300.0)
    assert (flagged.index_cache_mb, flagged.retrieval.ppr_damping, flagged.lock_timeout_s) == (300, 0.5, 7)
    assert load_config(file, ["index_cache_mb=1"], index_cache_mb=None).index_cache_mb == 1  # flag not given


def test_every_field_can_be_set_each_way(tmp_path, monkeypatch):
    """Each field, set to a value other than its default, arrives the same from all three."""
    default = Config().to_dict()
    changed = {"encoders.embedding_model": "some/model", "encoders.embedding_backend": "torch",
               "encoders.spacy_pipeline": "xx_pipeline", "encoders.max_encoded_chars": 400,
               "retrieval.disabled_rules": ("graph_view", "titles")}
    for name, kind in field_names().items():
        if name in changed:
            continue
        section, _, key = name.rpartition(".")
        value = (default[section] if section else default)[key]
        changed[name] = (not value) if kind is bool else value + 1 if not isinstance(value, float) else value / 2
    as_text = {name: str(value).lower() if isinstance(value, bool) else ",".join(value) if isinstance(value, tuple)
               else str(value) for name, value in changed.items()}
    nested: dict = {"encoders": {}, "retrieval": {}}
    for name, value in changed.items():
        section, _, key = name.rpartition(".")
        (nested[section] if section else nested)[key] = value
    file = tmp_path / "all.json"
    file.write_text(json.dumps(nested), encoding="utf-8")
    from_file = load_config(file, None)
    from_flags = load_config(None, [f"{name}={text}" for name, text in as_text.items()])
    for name, text in as_text.items():
        monkeypatch.setenv(env_name(name), text)
    from_env = load_config(None, None)
    assert from_file == from_flags == from_env
    assert Config.from_dict(from_file.to_dict()) == from_file
    flat = {f"{s}.{k}" if s else k: v for s, fields in (("", from_file.to_dict()),) for k, v in fields.items()
            if not isinstance(v, dict)}
    flat.update({f"{s}.{k}": v for s in ("encoders", "retrieval") for k, v in from_file.to_dict()[s].items()})
    assert flat == changed  # every field moved off its default


@pytest.mark.parametrize(("settings", "says"), [
    (["no_such_field=1"], "unknown setting 'no_such_field'"),
    (["index_cache_mb"], "FIELD=VALUE"),
    (["index_cache_mb=-5"], "index_cache_mb must be a finite number of MiB >= 0"),
    (["retrieval.use_graph=maybe"], "retrieval.use_graph must be true or false"),
    (["retrieval.ppr_damping=2"], "retrieval.ppr_damping must be between 0 and 1"),
    (["encoders.batch_size=1.5"], "encoders.batch_size must be an int"),
])
def test_a_bad_setting_is_one_clear_error(settings, says):
    with pytest.raises(InvalidInput, match=says.replace("(", r"\(")):
        load_config(None, settings)


def test_a_bad_config_file_names_itself(tmp_path):
    bad = _write_toml(tmp_path / "bad.toml", "index_cache_mb = \n")
    with pytest.raises(InvalidInput, match="not valid TOML"):
        load_config(bad, None)
    unknown = _write_toml(tmp_path / "unknown.toml", "[retrieval]\nppr = 0.5\n")
    with pytest.raises(InvalidInput, match=r"retrieval\.ppr"):
        load_config(unknown, None)
    with pytest.raises(InvalidInput, match="cannot read the config file"):
        load_config(tmp_path / "missing.toml", None)


def test_serve_hands_its_workers_the_whole_config(tmp_path, monkeypatch):
    """``zeromem serve`` with a file, a variable and a flag: the worker app uvicorn would
    build (``app_from_environment``, from the file ``$ZEROMEM_SERVE`` names) has that Config,
    and its /readyz reports the index cache budget it was given."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    import zeromem.interfaces.cli_service  # noqa: F401 - registers serve
    from zeromem.interfaces.server.app import app_from_environment

    file = _write_toml(tmp_path / "serve.toml", "index_cache_mb = 64\nmax_text_chars = 5000\n"
                       "[retrieval]\nppr_damping = 0.25\nwindow_turns = 6\n")
    monkeypatch.setenv("ZEROMEM_RETRIEVAL_WINDOW_TURNS", "8")
    seen = {}

    def run(target, **kwargs):  # what each uvicorn worker does: build the app from $ZEROMEM_SERVE
        app = app_from_environment()
        with TestClient(app, base_url=LOCAL) as client:
            seen["readyz"] = client.get("/readyz").json()
            seen["config"] = app.state.memory.config
            seen["worker"] = (app.state.auth.default_scope, kwargs["port"])

    monkeypatch.setattr("uvicorn.run", run)
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "m.db"), "--no-auth", "--user", "u",
                                      "--port", "8499", "--config", str(file), "--set", "retrieval.ppr_damping=0.5",
                                      "--index-cache-mb", "32"])
    assert result.exit_code == 0, result.output
    config = seen["config"]
    assert config.index_cache_mb == 32  # the flag over the file
    assert config.retrieval.ppr_damping == 0.5  # --set over the file
    assert config.retrieval.window_turns == 8  # the variable over the file
    assert config.max_text_chars == 5000  # the file over the default
    assert seen["readyz"]["index_cache"]["budget_bytes"] == 32 << 20
    assert dataclasses.asdict(config) == Config.load(file=file, settings={
        "index_cache_mb": 32, "retrieval.ppr_damping": "0.5"}).to_dict()


def test_serve_refuses_a_bad_setting_before_it_creates_a_store(tmp_path):
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "m.db"), "--set", "index_cache_mb=lots"])
    assert result.exit_code == 2 and "index_cache_mb must be a number" in result.output
    assert not (tmp_path / "m.db").exists()


def test_mcp_takes_the_same_settings(tmp_path, monkeypatch):
    pytest.importorskip("mcp")
    import zeromem.interfaces.mcp_server as mcp_server

    built = {}

    def build_server(memory, **scope):
        built["config"] = memory.config
        raise SystemExit(0)  # stop before serving

    monkeypatch.setattr(mcp_server, "build_server", build_server)
    monkeypatch.setenv("ZEROMEM_INDEX_CACHE_MB", "48")
    file = _write_toml(tmp_path / "mcp.toml", "index_cache_mb = 16\n[retrieval]\ntop_k_primary = 12\n")
    monkeypatch.setenv("ZEROMEM_CONFIG", str(file))  # --config's variable
    result = CliRunner().invoke(cli, ["mcp", "--db", str(tmp_path / "m.db"), "--user", "u",
                                      "--set", "retrieval.use_closure=false"])
    assert result.exit_code == 0, result.output
    config = built["config"]
    assert (config.index_cache_mb, config.retrieval.top_k_primary, config.retrieval.use_closure) == (48, 12, False)
    refused = CliRunner().invoke(cli, ["mcp", "--db", str(tmp_path / "n.db"), "--set", "retrieval.top_k_primary=0"])
    assert refused.exit_code == 2 and "retrieval.top_k_primary must be >= 1" in refused.output
    assert not (tmp_path / "n.db").exists()
