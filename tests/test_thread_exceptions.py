"""The suite's warning filters turn an exception in a background thread into a test failure."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]


def _project_filterwarnings() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return list(config["tool"]["pytest"]["ini_options"]["filterwarnings"])


@pytest.mark.parametrize(("target", "failed"), [
    ("lambda: 1 / 0", 1),
    ("lambda: None", 0),
])
def test_a_thread_that_raises_fails_its_test(pytester: pytest.Pytester, target: str, failed: int) -> None:
    filters = "\n".join(f"    {f!r}," for f in _project_filterwarnings())
    pytester.makepyprojecttoml(f"[tool.pytest.ini_options]\nfilterwarnings = [\n{filters}\n]\n")
    pytester.makepyfile(f"""
        import threading

        def test_background() -> None:
            thread = threading.Thread(target={target})
            thread.start()
            thread.join()
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == failed, result.stdout.str()
