"""LeaderAndIsr handling time (p50/p99 of the brokers' ``Finished LeaderAndIsr request in Nms`` lines) under the
``fetcher-lock`` scenario (KAFKA-6974: slow leader-epoch-checkpoint flushes), locked vs async fetcher model, in one
run; also the logged partitionMapLock waits of the handler threads.

    .venv/bin/python -m benchmarks.fetcher_lock
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path


def main() -> None:
    from broker.scenarios.base import Timeline
    from broker.scenarios.library import FETCHER_CHECKPOINT_DELAY_MS, FETCHER_LOCK_PARTITIONS, fetcher_lock

    with tempfile.TemporaryDirectory(prefix="pw-fetcher-lock-") as tmp:
        out = io.StringIO()
        fetcher_lock(Path(tmp), Timeline("fetcher-lock", Path(tmp) / "timeline.jsonl", out))
        events = [json.loads(line) for line in out.getvalue().splitlines()]
    print(f"fetcher-lock scenario (checkpoint flush delay {FETCHER_CHECKPOINT_DELAY_MS} ms, {FETCHER_LOCK_PARTITIONS} "
          "partitions x RF 3, two broker bounces per model)")
    for e in events:
        if e["event"] in ("leader-and-isr-times", "partition-map-lock-waits"):
            what = "LeaderAndIsr handling" if e["event"] == "leader-and-isr-times" else "partitionMapLock wait "
            print(f"{e['run']:<7} {what}: n={e['count']:4d}  p50 {e['p50']:7.0f} ms  p99 {e['p99']:7.0f} ms  "
                  f"max {e['max']:7.0f} ms")


if __name__ == "__main__":
    main()
