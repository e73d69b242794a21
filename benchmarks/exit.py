"""`exit_with`: end a benchmark that opened Delta tables with its own exit code, not delta-rs's abort.

A process that opened a `deltalake.DeltaTable` and read it into Arrow aborts at interpreter exit about 3 times in 10
("terminate called without an active exception", exit 134; delta-rs issue 2184, deltalake 1.6.6 here), after the
benchmark has printed everything. Its numbers are whole then; the exit code and the core message are not its.
"""

from __future__ import annotations

import os
import sys

__all__ = ["exit_with"]


def exit_with(code: int | None) -> None:
    """Flush stdout and stderr, then leave with `code` (None: 0) without running the interpreter's teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
