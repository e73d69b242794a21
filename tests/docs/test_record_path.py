"""scripts/record_path.py's tracer on a made-up project tree (no Spark): files in order of first entry, and a revisit
as a call back into a file entered earlier, with whether that file is still on the stack."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "record_path.py"

FILES = {
    "jobs/a.py": "def start(b, c):\n    b.work(helper)\n    return c.finish(b)\n\n\ndef helper():\n    return 1\n",
    "pipelines/b.py": "def work(callback):\n    return callback()\n\n\ndef again():\n    return 2\n",
    "schemas/c.py": "def finish(b):\n    return b.again()\n",
    "scripts/launch.py": "def launch(a, b, c):\n    return a.start(b, c)\n",  # not a project package
}


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # the script's dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_order_and_revisits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "modules", dict(sys.modules))  # the modules loaded here are forgotten after the test
    monkeypatch.setattr(sys, "path", list(sys.path))
    for key in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "GX_ANALYTICS_ENABLED"):
        monkeypatch.setenv(key, "unchanged")  # the script sets them only when unset
    record_path = _load(SCRIPT, "record_path_under_test")
    mods = {}
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
        mods[rel] = _load(tmp_path / rel, f"fake_{rel.replace('/', '_')[:-3]}")
    tracer = record_path.Tracer(tmp_path)
    tracer.active = True
    sys.setprofile(tracer.profile)
    try:
        mods["scripts/launch.py"].launch(mods["jobs/a.py"], mods["pipelines/b.py"], mods["schemas/c.py"])
    finally:
        sys.setprofile(None)
    out = tracer.snapshot()
    assert out["files"] == 3
    assert [(e["file"], e["function"], e["called_from"]) for e in out["order"]] == [
        ("jobs/a.py", "start", None), ("pipelines/b.py", "work", "jobs/a.py:start"),
        ("schemas/c.py", "finish", "jobs/a.py:start")]
    assert [(r["earlier"], r["later"], r["from_function"], r["into_function"], r["earlier_on_stack"])
            for r in out["revisits"]] == [
        ("jobs/a.py", "pipelines/b.py", "work", "helper", "start"),  # a callback: a.start is below b.work
        ("pipelines/b.py", "schemas/c.py", "finish", "again", None)]  # back to a stage already left
    assert out["revisited_files"] == ["jobs/a.py", "pipelines/b.py"]


def test_the_static_closure_adds_the_modules_a_touched_function_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader of LogPairing.__init__ opens the modules whose names it uses without calling into them: the table
    definitions it reads (schemas/tables.py) and the classes it builds (lake.state, lake.merge), and through the
    names' definitions what they name in turn."""
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    record_path = _load(SCRIPT, "record_path_closure")
    closure = record_path.static_closure([{"file": "jobs/detect/pairing.py", "functions": ["LogPairing.__init__"]}])
    assert {"schemas/tables.py", "lake/state.py", "lake/merge.py", "lake/read.py"} <= set(closure)
    assert "jobs/detect/pairing.py" not in closure  # called into: counted as such
    assert all(f.split("/")[0] in record_path.PROJECT for f in closure)
