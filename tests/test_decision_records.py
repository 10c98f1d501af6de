"""The decision records keep their format and their index is the one the script writes.

Each record in docs/decisions/ is short (Context / Decision / Consequences, a Status, at most
80 lines), names no path of the host it was written on and no issue-tracker ticket, and
docs/decisions/README.md is exactly what tools/decisions_index.py generates from the records.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("decisions_index", ROOT / "tools" / "decisions_index.py")
assert _spec and _spec.loader
index = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = index  # dataclasses look their module up there
_spec.loader.exec_module(index)


def test_there_is_one_record_per_id_with_no_gaps():
    ids = [index.read_record(path).id for path in index.record_paths()]
    assert len(ids) >= 63
    assert ids == [f"D-{n:03d}" for n in range(1, len(ids) + 1)]


def test_every_record_keeps_the_format():
    found = [problem for path in index.record_paths() for problem in index.problems(path)]
    assert not found, "\n".join(found)


def test_the_index_is_generated_from_the_records():
    expected = index.render_index([index.read_record(path) for path in index.record_paths()])
    assert index.INDEX.read_text(encoding="utf-8") == expected, "run python tools/decisions_index.py"


def test_superseded_records_name_a_record_that_exists():
    ids = {index.read_record(path).id for path in index.record_paths()}
    for path in index.record_paths():
        status = index.read_record(path).status
        assert set(re.findall(r"D-\d{3}", status)) <= ids, (path.name, status)


def test_the_format_check_catches_what_it_forbids(tmp_path):
    good = (index.DECISIONS / "0002-tokenizer.md").read_text(encoding="utf-8")
    record = tmp_path / "0002-tokenizer.md"
    record.write_text(good, encoding="utf-8")
    assert index.problems(record) == []
    for change, complaint in [
        (lambda t: t.replace("Status: Accepted", "Status: current"), "Status"),
        (lambda t: t.replace("## Consequences", "## Results"), "sections"),
        (lambda t: t + "\nMeasured on /work/shared/data.\n", "host"),
        (lambda t: t + "\nAs #29 asked.\n", "tracker"),
        (lambda t: t + "\nline\n" * 80, "lines"),
        (lambda t: t.replace("# D-002", "# D-003"), "file's number"),
    ]:
        record.write_text(change(good), encoding="utf-8")
        assert any(complaint in problem for problem in index.problems(record)), complaint


def test_links_between_records_and_to_measurements_resolve():
    folders = [index.DECISIONS, ROOT / "docs" / "measurements"]
    broken = []
    for folder in folders:
        for path in folder.glob("*.md"):
            for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8")):
                if "://" not in target and not (path.parent / target).exists():
                    broken.append(f"{path.relative_to(ROOT)} -> {target}")
    assert not broken, "\n".join(broken)


def test_measurement_logs_name_no_host_path_and_no_tracker():
    logs = [*sorted((ROOT / "docs" / "measurements").glob("*.md")), ROOT / "docs" / "ranking-constants.md"]
    assert len(logs) > 10
    found = [f"{path.name}:{number}: {line.strip()[:80]}" for path in logs
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if index._HOST_PATH.search(line) or index._TRACKER.search(line)]
    assert not found, "\n".join(found)
