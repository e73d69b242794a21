"""`planewatch roll --cluster C --bootstrap-server H:P --restart-cmd 'CMD {node}'`: restart every node of a cluster,
one at a time, each after a `safe` verdict.

The order (pipelines.restart_probe.roll_order): the brokers by id with ZooKeeper mode's controller last among them,
then the KRaft controllers, the quorum leader last. Before each restart the gate asks the verdict about the node
to restart next and the node restarted last (it must be registered and back in every ISR; a voter must leave a
caught-up majority), from the cluster itself through the Admin API and, with --lake, from planewatch's lake too
(every node scraped since the last restart, nothing under-replicated, no control request in flight), and records
every step in the lake's roll_steps (ROLL_TOO_FAST defers to the gate's verdict, fresher than a scrape). The gate
polls every --poll-s while the verdict is `wait` or `unknown` (with an estimate of when the broker restarted last is
back in every ISR, from its own catch-up rate so far); `unsafe` stops the roll (exit 1) with its reasons, as
does a gate that is not `safe` within --gate-timeout-s or a restart command that fails. Each step is printed (with
--json, one JSON object per line). The last restart is followed by a gate for its recovery.

`{node}` in the restart commands is replaced by the node id; controllers use --controller-restart-cmd when given.
Exit status: 0 rolled and recovered, 1 stopped (unsafe, timed out, a restart failed), 4 bad Admin API connection.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from planewatch.commands.roll_check import ADMIN_CONFIG_INVALID, QUERY_TIMEOUT_S, add_admin_arguments

# How often the gate asks again while the verdict is wait or unknown: a scrape interval of the reference set-up.
POLL_S = 5.0
# How long one gate may wait for `safe`: a restarted broker of a large cluster catches up for minutes.
GATE_TIMEOUT_S = 900.0
# How long one restart command may run.
RESTART_TIMEOUT_S = 300.0
# Exit status when the roll stops before its end (unsafe, a gate timed out, a restart command failed).
STOPPED = 1


def configure(parser: argparse.ArgumentParser) -> None:
    """Arguments of `planewatch roll`."""
    parser.add_argument("--cluster", required=True, help="the cluster (its name in the lake and --admin-config)")
    add_admin_arguments(parser)
    parser.add_argument("--restart-cmd", required=True, metavar="CMD",
                        help="shell command that restarts one broker; {node} is its id (e.g. 'ssh kafka-{node} "
                             "sudo systemctl restart kafka')")
    parser.add_argument("--controller-restart-cmd", default=None, metavar="CMD",
                        help="shell command that restarts one KRaft controller (default: --restart-cmd)")
    parser.add_argument("--lake", default=None,
                        help="planewatch's lake (a directory or s3://bucket/prefix): gate on its signals too")
    parser.add_argument("--nodes", type=_node_ids, default=None, metavar="IDS",
                        help="comma-separated node ids to restart, in this order (default: every node, in the "
                             "roll's order)")
    parser.add_argument("--poll-s", type=float, default=POLL_S, help=f"gate poll interval (default {POLL_S:g})")
    parser.add_argument("--gate-timeout-s", type=float, default=GATE_TIMEOUT_S,
                        help=f"longest wait for a safe verdict (default {GATE_TIMEOUT_S:g})")
    parser.add_argument("--dry-run", action="store_true", help="print the order and the first gate, restart nothing")
    parser.add_argument("--json", action="store_true", help="print each step as a JSON line")


def _node_ids(text: str) -> list[int]:
    """--nodes: comma-separated node ids."""
    try:
        ids = [int(n) for n in text.split(",") if n.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated node ids, got {text!r}") from None
    if not ids or any(n < 0 for n in ids):
        raise argparse.ArgumentTypeError(f"expected comma-separated node ids, got {text!r}")
    return ids


@dataclass
class _Roll:
    args: argparse.Namespace
    props: dict[str, str]
    roll_id: str = ""
    steps: int = 0
    recorder: Any = None  # lake.merge.DeltaMerger of roll_steps, with --lake
    store: Any = None  # api.store.LakeStore of --lake, opened at the first gate and kept for the roll

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def record(self, kind: str, at: datetime, fields: dict[str, Any]) -> None:
        """The step into the lake's roll_steps (with --lake), exactly once per step of this roll."""
        if self.args.lake is None:
            return
        import pyarrow as pa

        from lake.merge import DeltaMerger
        from lake.storage import join
        from schemas.tables import ROLL_STEPS

        if self.recorder is None:
            self.recorder = DeltaMerger(join(self.args.lake, ROLL_STEPS.name), ROLL_STEPS, f"roll.{self.roll_id}",
                                        ("roll_id", "step"))
        self.steps += 1
        node = fields.get("node")
        detail = {k: v for k, v in fields.items() if k not in ("node", "verdict")}
        row = {"roll_id": self.roll_id, "step": self.steps, "cluster": self.args.cluster, "kind": kind,
               "node": node if isinstance(node, int) else None, "verdict": fields.get("verdict"), "at": at,
               "detail": json.dumps(detail, default=str)}
        self.recorder.insert_arrow(pa.Table.from_pylist([row], ROLL_STEPS.to_arrow()), self.steps)

    def say(self, step: str, **fields: Any) -> None:
        at = datetime.now(UTC)
        self.record(step, at, fields)
        if self.args.json:
            print(json.dumps({"at": at.isoformat(), "step": step, **fields}, default=str), flush=True)
            return
        detail = " ".join(f"{k}={v}" for k, v in fields.items() if k != "reasons")
        print(f"{at:%H:%M:%S} {step} {detail}", flush=True)
        for r in fields.get("reasons", []):
            print(f"    {r}", flush=True)

    def verdict(self, node: int | None, restarted: int | None, since: datetime | None) -> Any:
        from api.roll_safety import admin_verdict, cluster_verdict
        from api.store import LakeStore, TableUnavailable
        from pipelines.roll_safety import Reason, Verdict
        from schemas.roll_safety import CheckStatus, RollCheck, RollVerdict

        now = datetime.now(UTC)
        if self.args.lake is None:
            return admin_verdict(self.args.cluster, self.props, now, node, restarted)
        if self.store is None:
            self.store = LakeStore(self.args.lake, background_reload=False, query_timeout_s=QUERY_TIMEOUT_S)
        try:
            return cluster_verdict(self.store, self.args.cluster, now, broker_id=node, since=since,
                                   admin={self.args.cluster: self.props}, restarted=restarted)
        except TableUnavailable as e:
            return Verdict(self.args.cluster, RollVerdict.unknown, now, "unknown", [],
                           [Reason(RollCheck.NODES_FRESH, CheckStatus.unknown, f"the lake cannot be read: {e}")], node)

    def gate(self, node: int | None, restarted: int | None, since: datetime | None) -> bool:
        """Wait for `safe` about `node` (None: the cluster after the last restart); False when the roll must stop."""
        from pipelines.restart_probe import recovery_eta_s

        began = time.monotonic()
        said: tuple[str, list[str]] | None = None
        progress: list[tuple[float, float]] = []  # the restarted broker's share of replicas in sync, over time
        while True:
            v = self.verdict(node, restarted, since)
            reasons = [f"{r.status.value} {r.check.value}: {r.text}" for r in v.reasons
                       if r.status.value not in ("ok", "skipped")]
            waited = round(time.monotonic() - began, 1)
            share = next((r.value for r in v.reasons if r.check.value == "REPLICAS_IN_SYNC"
                          and r.broker_id == restarted and r.value is not None), None)
            if share is not None:
                progress.append((waited, share))
            if (v.verdict.value, reasons) != said:
                eta = recovery_eta_s(progress)
                self.say("gate", node=node, verdict=v.verdict.value, waited_s=waited,
                         **({} if eta is None else {"recovered_in_s": round(eta, 1)}), reasons=reasons)
                said = (v.verdict.value, reasons)
            if v.verdict.value == "safe":
                return True
            if v.verdict.value == "unsafe":
                self.say("stopped", node=node, why="unsafe", reasons=reasons)
                return False
            if waited > self.args.gate_timeout_s:
                self.say("stopped", node=node, why=f"not safe within {self.args.gate_timeout_s:g} s",
                         reasons=reasons)
                return False
            time.sleep(self.args.poll_s)

    def restart(self, node: int, controller: bool) -> bool:
        import subprocess

        template = (self.args.controller_restart_cmd or self.args.restart_cmd) if controller else self.args.restart_cmd
        cmd = template.replace("{node}", str(node))
        began = time.monotonic()
        try:
            done = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=RESTART_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired:
            self.say("stopped", node=node, why=f"restart command ran over {RESTART_TIMEOUT_S:g} s", cmd=cmd)
            return False
        took = round(time.monotonic() - began, 1)
        if done.returncode != 0:
            self.say("stopped", node=node, why=f"restart command exited {done.returncode}", cmd=cmd,
                     reasons=(done.stderr or done.stdout).strip().splitlines()[-5:])
            return False
        self.say("restarted", node=node, controller=controller, took_s=took)
        return True


def run(args: argparse.Namespace) -> int:
    """Roll the cluster (module docstring)."""
    from api.kafka_admin import AdminConfigError
    from planewatch.commands.roll_check import admin_connections

    try:
        admin = admin_connections(args)
    except AdminConfigError as e:
        print(f"planewatch roll: {e}", file=sys.stderr)
        return ADMIN_CONFIG_INVALID
    if not admin or args.cluster not in admin:
        print(f"planewatch roll: no Admin API connection for {args.cluster!r} (--bootstrap-server or "
              "--admin-config)", file=sys.stderr)
        return ADMIN_CONFIG_INVALID
    roll = _Roll(args, admin[args.cluster], f"{args.cluster}-{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.getpid()}")
    try:
        return _run(roll)
    finally:
        roll.close()


def _run(roll: _Roll) -> int:
    """The roll itself (module docstring): its exit status."""
    from api.kafka_admin import AdminUnavailable, describe_cluster
    from pipelines.restart_probe import roll_order

    args = roll.args
    try:
        state = describe_cluster(roll.props)
    except AdminUnavailable as e:
        print(f"planewatch roll: cannot describe {args.cluster!r}: {e}", file=sys.stderr)
        return STOPPED
    order = roll_order(state)
    if args.nodes:
        order = list(args.nodes)
    voters = {v.node for v in state.quorum.voters} if state.quorum else set()
    roll.say("plan", order=order, controllers=sorted(voters), mode="kraft" if state.quorum else "zookeeper")
    restarted: int | None = None
    since: datetime | None = None
    for node in order:
        if not roll.gate(node, restarted, since):
            return STOPPED
        if args.dry_run:
            return 0
        if not roll.restart(node, node in voters and node not in state.brokers):
            return STOPPED
        restarted, since = node, datetime.now(UTC)
    if not roll.gate(None, restarted, since):
        return STOPPED
    roll.say("rolled", nodes=order)
    return 0
