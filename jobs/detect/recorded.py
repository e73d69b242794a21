"""`BatchRecords`: what a micro-batch read or carried, written into its query's checkpoint before the batch commits,
so a replay of the batch (after a crash between its commits) reads the same, and a restarted query picks up what
the one before it carried.

One JSON file per batch id under one directory of the checkpoint, written atomically (a temporary file, then a
rename); the newest KEEP_BATCHES stay (a replay is of the last batch or two).
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

__all__ = ["KEEP_BATCHES", "BatchRecords"]

# A checkpoint keeps the records of this many newest batches (a replay is of the last one or two).
KEEP_BATCHES = 100
_SUFFIX = ".json"

log = logging.getLogger(__name__)


class BatchRecords:
    """The records of one query kept in `directory` (None: the query has no checkpoint; nothing is kept)."""

    def __init__(self, directory: str | None) -> None:
        self.directory = directory

    def read(self, batch_id: int) -> Any:
        """The record of `batch_id`; None when there is none, or when it cannot be read (logged with the reason: the
        batch computes anew)."""
        if self.directory is None:
            return None
        path = os.path.join(self.directory, f"{batch_id}{_SUFFIX}")
        try:
            with open(path, encoding="utf-8") as fh:
                return json.load(fh)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("%s: the record of batch %d cannot be read (%s): not used", path, batch_id, e)
            return None

    def write(self, batch_id: int, value: Any) -> None:
        """Record `value` (JSON) for `batch_id`, replacing any earlier record of it; drop the oldest beyond
        KEEP_BATCHES."""
        if self.directory is None:
            return
        os.makedirs(self.directory, exist_ok=True)
        tmp = os.path.join(self.directory, f".{batch_id}{_SUFFIX}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(value, fh)
        os.replace(tmp, os.path.join(self.directory, f"{batch_id}{_SUFFIX}"))
        kept = sorted(int(n.removesuffix(_SUFFIX)) for n in os.listdir(self.directory)
                      if n.endswith(_SUFFIX) and n.removesuffix(_SUFFIX).isdigit())
        for old in kept[:-KEEP_BATCHES]:
            os.remove(os.path.join(self.directory, f"{old}{_SUFFIX}"))
