"""Copy what an Apache Kafka scenario run wrote into a test fixture: ``tests/fixtures/kafka/<name>/``.

    .venv/bin/planewatch scenario produce-backlog-without-control-plane --kafka 3.9.1 --dir /tmp/run
    .venv/bin/python scripts/capture_kafka_fixture.py /tmp/run kafka-3.9.1-produce-backlog-without-control-plane

Every broker's (and KRaft controller's) state-change.log and controller.log are copied whole; kafka-request.log keeps
every control request's line (LeaderAndIsr, UpdateMetadata, StopReplica, ControlledShutdown, the KRaft quorum's
requests) and the first REQUEST_LOG_SAMPLE others, so the fixture stays small; the scenario's timeline is kept as
``timeline.jsonl`` beside the cluster directory (``cluster/``), with a PROVENANCE file naming the version and run.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

# Lines of other requests (Produce, Fetch, Metadata...) a fixture keeps per request log: enough for every shape.
REQUEST_LOG_SAMPLE = 40
_CONTROL = re.compile(r'"requestApiKeyName":"(LEADER_AND_ISR|UPDATE_METADATA|STOP_REPLICA|CONTROLLED_SHUTDOWN|'
                      r'BROKER_HEARTBEAT|BROKER_REGISTRATION|ALTER_PARTITION)"|apiKey=(LEADER_AND_ISR|UPDATE_METADATA|'
                      r'STOP_REPLICA|CONTROLLED_SHUTDOWN)')
_START = re.compile(r"^\[\d{4}-")


def _records(text: str) -> list[str]:
    """Log records (a line and its continuation lines)."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        if _START.match(line) or not out:
            out.append(line)
        else:
            out[-1] += line
    return out


def capture(run_dir: Path, name: str, target_root: Path) -> Path:
    cluster = run_dir / "cluster"
    info = json.loads((cluster / "cluster.json").read_text())
    target = target_root / name
    shutil.rmtree(target, ignore_errors=True)
    for node_dir in sorted([*cluster.glob("broker-*"), *cluster.glob("controller-*")]):
        logs = node_dir / "logs"
        out = target / "cluster" / node_dir.name
        out.mkdir(parents=True)
        for log in ("state-change.log", "controller.log"):
            if (logs / log).exists():
                shutil.copy(logs / log, out / log)
        if (logs / "kafka-request.log").exists():
            records = _records((logs / "kafka-request.log").read_text(errors="replace"))
            keep = [r for r in records if _CONTROL.search(r)]
            others = [r for r in records if not _CONTROL.search(r)][:REQUEST_LOG_SAMPLE]
            kept = sorted(keep + others, key=records.index)
            (out / "kafka-request.log").write_text("".join(kept))
    timelines = sorted(run_dir.glob("scenario-*.jsonl"))
    if timelines:
        shutil.copy(timelines[0], target / "timeline.jsonl")
    (target / "PROVENANCE").write_text(
        f"Apache Kafka {info.get('kafka_version')} ({info.get('mode')}), written by a `planewatch scenario` run "
        f"(timeline.jsonl says which) on {info.get('bootstrap.servers')}; captured by scripts/capture_kafka_fixture.py "
        f"(state-change.log and controller.log whole; kafka-request.log: every control request and the first "
        f"{REQUEST_LOG_SAMPLE} other requests).\n")
    return target


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: capture_kafka_fixture.py RUN_DIR NAME")
    print(capture(Path(sys.argv[1]), sys.argv[2], Path(__file__).resolve().parents[1] / "tests/fixtures/kafka"))  # noqa: T201
