"""jobs.run.warmup: the executors' Python workers run the engine once before the first batch."""

from __future__ import annotations

from typing import Any

import pytest

from jobs.run.warmup import _warm, warm_executors


def test_a_warm_up_task_runs_the_engine_over_each_family() -> None:
    (out,) = list(_warm(iter([])))
    assert out.column("seconds")[0].as_py() >= 0.0


@pytest.mark.spark
def test_the_executors_are_warmed_and_a_failure_is_only_logged(spark: Any, caplog: pytest.LogCaptureFixture) -> None:
    took = warm_executors(spark)
    assert took is not None
    assert took >= 0.0

    class Broken:
        sparkContext = None

    assert warm_executors(Broken()) is None  # type: ignore[arg-type]
    assert "warming the executors' Python workers failed" in caplog.text
