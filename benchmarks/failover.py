"""Failover time: from a broker's death until every partition it led has a new leader, for 1,000 partitions.

    .venv/bin/python -m benchmarks.failover [--partitions 1000] [--brokers 3] [--session-timeout-ms 3000]

Starts a reference cluster (controller + brokers, separate processes) in a temporary directory, creates a topic with
replication factor 3, then stops the broker leading the most partitions twice over: once with SIGTERM (clean: the
broker unregisters, the controller elects at once) and once with SIGKILL (the controller notices when the session
times out). For each it prints the time until the controller had elected new leaders for all of them, and the time
until a client's Metadata (from a surviving broker, fed by UpdateMetadata) showed them.
"""

from __future__ import annotations

import argparse
import signal
import tempfile
import time
from pathlib import Path

from broker.cluster.http import ControllerClient
from broker.cluster.launcher import Cluster, ClusterSpec

TOPIC = "failover"
POLL_S = 0.02
TIMEOUT_S = 120.0


def _led_by(client: ControllerClient, broker: int) -> set[int]:
    return {p["partition"] for p in client.status()["partitions"] if p["topic"] == TOPIC and p["leader"] == broker}


def _client_view(bootstrap: str, victim: int) -> bool:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(TOPIC, timeout=10)
    return all(p.leader not in (victim, -1) for p in md.topics[TOPIC].partitions.values())


def _one(cluster: Cluster, sig: int, survivors_bootstrap: str) -> tuple[int, float, float]:
    client = ControllerClient(cluster.controller_url, timeout_s=10)
    counts = {b: len(_led_by(client, b)) for b in cluster.brokers}
    victim = max(counts, key=lambda b: counts[b])
    t0 = time.monotonic()
    cluster.brokers[victim].popen.send_signal(sig)  # measured from the signal, not from the process exit
    controller_s = client_s = 0.0
    while time.monotonic() - t0 < TIMEOUT_S:
        if not controller_s and not _led_by(client, victim):
            controller_s = time.monotonic() - t0
        if controller_s and _client_view(survivors_bootstrap, victim):
            client_s = time.monotonic() - t0
            break
        time.sleep(POLL_S)
    cluster.kill_broker(victim, sig)  # reap it
    cluster.start_broker(victim)
    return victim, controller_s, client_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--session-timeout-ms", type=int, default=3000)
    args = ap.parse_args()
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    with tempfile.TemporaryDirectory(prefix="pw-failover-") as tmp:
        cluster = Cluster(ClusterSpec(Path(tmp), args.brokers, session_timeout_ms=args.session_timeout_ms))
        try:
            cluster.start()
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers()})
            for fut in admin.create_topics([NewTopic(TOPIC, args.partitions, min(3, args.brokers))]).values():
                fut.result(120)
            client = ControllerClient(cluster.controller_url)
            end = time.monotonic() + TIMEOUT_S
            while len([p for p in client.status()["partitions"] if p["leader"] >= 0]) < args.partitions:
                if time.monotonic() > end:
                    raise TimeoutError("topic creation did not finish")
                time.sleep(0.2)
            rf = min(3, args.brokers)
            while sum(len(list((cluster.broker_dir(b) / "data").glob(f"{TOPIC}-*"))) for b in cluster.brokers) \
                    < args.partitions * rf:  # every replica's log created (LeaderAndIsr handled everywhere)
                if time.monotonic() > end + TIMEOUT_S:
                    raise TimeoutError("the brokers did not create every replica")
                time.sleep(0.5)
            time.sleep(2)
            print(f"failover of the busiest of {args.brokers} brokers, {args.partitions} partitions (RF "
                  f"{min(3, args.brokers)}), session timeout {args.session_timeout_ms} ms")
            for name, sig in (("SIGTERM (clean)", signal.SIGTERM), ("SIGKILL", signal.SIGKILL)):
                time.sleep(3)  # let the restarted broker rejoin
                survivors = ",".join(f"127.0.0.1:{cluster.ports[b]['PLAINTEXT']}" for b in sorted(cluster.brokers))
                victim, ctl, cli = _one(cluster, sig, survivors)
                print(f"{name:<16} broker {victim}: controller elected new leaders after {ctl * 1000:8.0f} ms, "
                      f"clients saw them after {cli * 1000:8.0f} ms")
        finally:
            cluster.stop()


if __name__ == "__main__":
    main()
