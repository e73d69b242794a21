"""Failpoints: named steps of a commit where a crash test holds the process, so that its kill -9 lands between two
steps that otherwise follow each other within milliseconds (a batch's tables commit at once: one table committed
and another not lasts a round trip). Unset, as in production, a failpoint does nothing.

    PLANEWATCH_FAILPOINTS="commit:quarantine=3"   # hold table quarantine's commit of each batch 3 s before it starts
"""

from __future__ import annotations

import os
import time

__all__ = ["FAILPOINTS_ENV", "hold"]

FAILPOINTS_ENV = "PLANEWATCH_FAILPOINTS"


def hold(point: str, name: str) -> None:
    """Sleep as long as FAILPOINTS_ENV asks for `point`:`name` (comma-separated `point:name=seconds`); else return.

    Raises:
        ValueError: the matching item's seconds are not a number (named, with the variable).
    """
    spec = os.environ.get(FAILPOINTS_ENV)
    if not spec:
        return
    for item in spec.split(","):
        key, _, seconds = item.strip().partition("=")
        if key == f"{point}:{name}":
            try:
                time.sleep(float(seconds))
            except ValueError:
                raise ValueError(f"{FAILPOINTS_ENV}: {item.strip()!r} is not point:name=seconds") from None
