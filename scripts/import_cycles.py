"""Import cycles among the project's modules: prints each cycle, exits 1 if there is one, 0 if none.

    .venv/bin/python scripts/import_cycles.py [PACKAGE ...]   (default: jobs lake pipelines schemas api planewatch
                                                                broker)

An edge A -> B is an import statement of module A that runs when A is imported or when one of its functions runs:
one in A's module body, inside a module-level `if`/`try`/`with` or class body, or inside a function (an import a
function defers is still a dependency a reader follows: two modules that import each other, one of them lazily,
are one module split in two), but not under `if TYPE_CHECKING:` (its `else` counts; annotations only) and not under
`if __name__ == "__main__":` (that code runs when A is a script, not an import). `from P import
n` is an edge to the module `P.n` when that is a project module, else to `P`; relative imports are resolved; imports
of modules outside the given packages are ignored. A package's `__init__` is the module named by the package.
Cycles are the strongly connected components of more than one module (or a module importing itself), found with
Tarjan's algorithm.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jobs", "lake", "pipelines", "schemas", "api", "planewatch", "broker")


def module_files(packages: Sequence[str]) -> dict[str, Path]:
    """Project module name -> its file, for every .py file under the packages."""
    out: dict[str, Path] = {}
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_main_guard(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def module_level_imports(body: Sequence[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when the module is imported or one of its functions runs (see the module
    docstring)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from module_level_imports(node.body)
        elif isinstance(node, ast.If):
            if not (_is_type_checking(node.test) or _is_main_guard(node.test)):
                yield from module_level_imports(node.body)
            yield from module_level_imports(node.orelse)
        elif isinstance(node, ast.Try | ast.TryStar):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from module_level_imports(block)
        elif isinstance(node, ast.With | ast.AsyncWith | ast.ClassDef):
            yield from module_level_imports(node.body)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While):
            yield from module_level_imports(node.body)
            yield from module_level_imports(node.orelse)
        elif isinstance(node, ast.Match):
            for case in node.cases:
                yield from module_level_imports(case.body)


def import_graph(packages: Sequence[str]) -> dict[str, set[str]]:
    """Project module -> the project modules its imports name (module body and functions)."""
    files = module_files(packages)
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        for node in module_level_imports(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    package = name.split(".") if is_package else name.split(".")[:-1]
                    package = package[: len(package) - (node.level - 1)]
                    base = ".".join([*package, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            graph[name].update(t for t in targets if t in files)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted; components in discovery order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(sorted(graph[start]))))
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                out.append(sorted(component))
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The components that are cycles: more than one module, or one that imports itself."""
    return [c for c in strongly_connected(graph) if len(c) > 1 or c[0] in graph[c[0]]]


def main(argv: Sequence[str] | None = None) -> int:
    packages = tuple(argv if argv else sys.argv[1:]) or PACKAGES
    graph = import_graph(packages)
    found = cycles(graph)
    edges = sum(len(v) for v in graph.values())
    out = sys.stdout
    for component in found:
        members = set(component)
        out.write(f"cycle of {len(component)} modules:\n")
        for name in component:
            out.write(f"  {name} -> {', '.join(sorted(graph[name] & members))}\n")
    out.write(f"{len(graph)} modules, {edges} imports among them (function bodies included), {len(found)} cycle(s)\n")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
