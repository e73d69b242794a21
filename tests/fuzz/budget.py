"""How many examples a fuzz test runs: its CI budget, scaled up under the ``long`` profile (see conftest.py)."""

from __future__ import annotations

import os

__all__ = ["PROFILE", "examples"]

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
_SCALE = {"ci": 1, "long": 50}


def examples(n: int) -> int:
    """``n`` examples in CI, more in a long local session."""
    return n * _SCALE.get(PROFILE, 1)
