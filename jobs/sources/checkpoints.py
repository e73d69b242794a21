"""A streaming query's checkpoint directory: what planewatch keeps there, and Spark's offset log read back.

The directory (`Settings.checkpoint_path(<query>)`) is Spark's: `offsets/<batch id>` is written before a batch runs
(a version line, the batch metadata, then one offset per source), `commits/<batch id>` after it. Beside those files
planewatch keeps:

* `_planewatch_app_id` (:data:`APP_ID_FILE`): the query's run id, part of the Delta app id of every table it writes.
  A new checkpoint restarts batch ids at 0 and gets a new run id with it, so its batches are not taken for replays
  of the old checkpoint's batches;
* `_planewatch_scrapes` (:data:`SCRAPE_SPOOL_DIR`): the Prometheus source's answers of planned scrapes, kept until
  their batch commits (they belong to the offsets logged here; a new checkpoint starts without them).

The offset log tells a batch's driver what its source planned (the file source's bytes and skipped entries, which
Kafka reader began a checkpoint) without asking the source.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

__all__ = ["APP_ID_FILE", "SCRAPE_SPOOL_DIR", "app_run_id", "latest_logged_offset", "logged_offset"]

APP_ID_FILE = "_planewatch_app_id"
SCRAPE_SPOOL_DIR = "_planewatch_scrapes"
# Characters of a run id (hex: 48 random bits, so two checkpoints of one query are not expected to share one).
RUN_ID_CHARS = 12
_OFFSETS = "offsets"


def app_run_id(checkpoint: str) -> str:
    """The run id kept in the checkpoint directory (created on first use)."""
    os.makedirs(checkpoint, exist_ok=True)
    f = os.path.join(checkpoint, APP_ID_FILE)
    if not os.path.exists(f):
        tmp = f"{f}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(uuid.uuid4().hex[:RUN_ID_CHARS])
        os.replace(tmp, f)
    with open(f) as fh:
        return fh.read().strip()


def logged_offset(checkpoint: str, batch_id: int) -> dict[str, Any] | None:
    """The source offset Spark's offset log (`<checkpoint>/offsets/<id>`: a version line, the batch metadata, then
    one offset per source) recorded for batch `batch_id` before running it; None if unknown."""
    try:
        with open(os.path.join(checkpoint, _OFFSETS, str(batch_id)), encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    if len(lines) != 3:  # one source per planewatch query
        return None
    try:
        end = json.loads(lines[2])
    except ValueError:
        return None
    return end if isinstance(end, dict) else None


def latest_logged_offset(checkpoint: str) -> dict[str, Any] | None:
    """:func:`logged_offset` of the newest batch the checkpoint's offset log holds; None for a checkpoint without
    one."""
    try:
        batches = [int(n) for n in os.listdir(os.path.join(checkpoint, _OFFSETS)) if n.isdigit()]
    except OSError:
        return None
    return logged_offset(checkpoint, max(batches)) if batches else None
