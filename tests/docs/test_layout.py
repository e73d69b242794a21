"""The house's rules, checked on the code (nothing run): no import circle (imports inside functions counted), every
package opens with a map of its modules and an `__all__`, Delta opened only in lake/, schemas/ free of I/O libraries,
and an analytics module over 500 lines says why on its first lines."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("jobs", "lake", "pipelines", "schemas", "api", "planewatch", "broker")
ANALYTICS = ("jobs", "lake", "pipelines", "schemas", "api")
# An analytics module longer than this says why on its first lines (a comment `# Over 500 lines: <reason>`).
MAX_LINES = 500
SIZE_REASON = re.compile(r"^# Over 500 lines: \S", re.MULTILINE)
# The libraries that open Delta tables; only lake/ imports them.
DELTA_LIBRARIES = ("deltalake",)
# The I/O libraries the vocabulary never imports.
IO_LIBRARIES = ("deltalake", "pyarrow.parquet", "pyarrow.dataset", "pyspark.sql.streaming", "requests", "httpx")


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_layout_{name}", ROOT / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _modules(packages: tuple[str, ...]) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py") if "__pycache__" not in p.parts)


def _imported(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def test_no_import_circle_counting_imports_inside_functions() -> None:
    cycles = _script("import_cycles")
    graph = cycles.import_graph(PACKAGES)
    assert cycles.cycles(graph) == []


@pytest.mark.parametrize("package", sorted({p.parent.relative_to(ROOT).as_posix()
                                            for p in _modules(PACKAGES) if p.name == "__init__.py"}))
def test_every_package_opens_with_a_map_of_its_modules(package: str) -> None:
    init = ROOT / package / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree) or ""
    members = sorted(p.stem if p.is_file() else p.name for p in (ROOT / package).iterdir()
                     if not p.name.startswith(("_", ".")) and (p.suffix == ".py" or (p / "__init__.py").is_file()))
    unnamed = [m for m in members if not re.search(rf"(?<![\w]){re.escape(m)}(?![\w])", doc)]
    assert not unnamed, f"{package}/__init__.py's map does not name {unnamed}"
    assert any(isinstance(n, ast.Assign | ast.AnnAssign) and "__all__" in ast.unparse(n).split("=")[0]
               for n in tree.body), f"{package}/__init__.py has no __all__"


def test_only_lake_opens_delta_tables() -> None:
    outside = [p.relative_to(ROOT).as_posix() for p in _modules(PACKAGES)
               if p.relative_to(ROOT).parts[0] != "lake"
               and any(m == lib or m.startswith(f"{lib}.") for m in _imported(p) for lib in DELTA_LIBRARIES)]
    assert outside == []


def test_the_vocabulary_imports_no_io_library() -> None:
    found = {p.relative_to(ROOT).as_posix(): sorted(m for m in _imported(p) if m.startswith(IO_LIBRARIES))
             for p in _modules(("schemas",))}
    assert {k: v for k, v in found.items() if v} == {}


def test_an_analytics_module_over_500_lines_says_why() -> None:
    long = [p for p in _modules(ANALYTICS) if len(p.read_text(encoding="utf-8").splitlines()) > MAX_LINES]
    silent = [p.relative_to(ROOT).as_posix() for p in long
              if not SIZE_REASON.search("\n".join(p.read_text(encoding="utf-8").splitlines()[:80]))]
    assert silent == []
