"""KIP-291 for real: a LeaderAndIsr moving leadership away under a saturating acks=all produce load.

One run, two brokers (child processes, 127.0.0.1), identical load, control plane on vs off:

* topic ``kip291`` with PARTITIONS partitions, ``message.timestamp.type=LogAppendTime`` so every batch carries the
  broker's append time; an UpdateMetadata first tells the broker that broker 2 exists (an unreachable endpoint);
* PRODUCERS confluent-kafka producers (acks=all, linger.ms=5, one connection each) keep the data-plane request
  queue of a broker with IO_THREADS handler thread(s) busy;
* after WARMUP_S the controller sends MOVES LeaderAndIsr requests, one partition each, making broker 2 the leader
  (leader epoch +1), to the control listener (on) or to the data listener (off, as before KIP-291), one every
  MOVE_INTERVAL_S; it records the wall-clock send time and the response time.

After the load stops and the broker shut down cleanly, each moved partition's log is read back: every record with a
LogAppendTime at or after the controller's send was accepted **in the window** (KIP-291: these are the records a
new follower later truncates); the last such append time minus the send time is how long the broker kept
accepting produce for that partition. Printed per mode: median/max of that time, records accepted in the window,
and the LeaderAndIsr response time.

Bounded: MOVES moves per mode, load for at most WARMUP_S + MOVES * MOVE_INTERVAL_S + TAIL_S.
Run: .venv/bin/python -m benchmarks.kip291_leadership_move
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.broker_support import RawClient, broker_process
from broker.log import LogManager, TopicPartition
from broker.protocol import decode_response, encode_request
from broker.protocol.records import parse_batches

PARTITIONS = 8
MOVES = 5
PRODUCERS = 12
IO_THREADS = 1
WARMUP_S = 3.0
MOVE_INTERVAL_S = 1.0
TAIL_S = 1.0
TOPIC = "kip291"
MESSAGE = b"m" * 100


def _update_metadata(data_port: int) -> bytes:
    live = [{"id": b, "endpoints": [{"port": data_port if b == 1 else 1, "host": "127.0.0.1",
                                     "listener": "PLAINTEXT", "security_protocol": 0}], "rack": None} for b in (1, 2)]
    states = [{"partition_index": p, "controller_epoch": 1, "leader": 1, "leader_epoch": 0, "isr": [1, 2],
               "zk_version": 0, "replicas": [1, 2], "offline_replicas": []} for p in range(PARTITIONS)]
    body = {"controller_id": 9, "controller_epoch": 1, "broker_epoch": -1, "live_brokers": live,
            "topic_states": [{"topic_name": TOPIC, "topic_id": uuid.UUID(int=0), "partition_states": states}]}
    return encode_request(6, 6, 1, "controller-9", body)


def _leader_and_isr(correlation_id: int, partition: int) -> bytes:
    states = [{"partition_index": partition, "controller_epoch": 1, "leader": 2, "leader_epoch": 1, "isr": [2, 1],
               "partition_epoch": 1, "replicas": [2, 1], "adding_replicas": [], "removing_replicas": [],
               "is_new": False}]
    body = {"controller_id": 9, "controller_epoch": 1, "broker_epoch": -1, "type": 0,
            "live_leaders": [{"broker_id": 2, "host_name": "127.0.0.1", "port": 1}],
            "topic_states": [{"topic_name": TOPIC, "topic_id": uuid.UUID(int=0), "partition_states": states}]}
    return encode_request(4, 4, correlation_id, "controller-9", body)


def _load(bs: str, stop: threading.Event, counts: dict[str, int]) -> None:
    from confluent_kafka import Producer

    producers = [Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5, "message.timeout.ms": 3000,
                           "client.id": f"load-{i}"}) for i in range(PRODUCERS)]

    def done(err: Any, _msg: Any) -> None:
        counts["failed" if err is not None else "acked"] += 1

    i = 0
    while not stop.is_set():
        p = producers[i % PRODUCERS]
        try:
            p.produce(TOPIC, MESSAGE, partition=i % PARTITIONS, on_delivery=done)
        except BufferError:
            p.poll(0.001)
        i += 1
        if i % 1000 == 0:
            for q in producers:
                q.poll(0)
    for q in producers:
        q.flush(5)


def run_mode(control_plane: bool) -> dict[str, Any]:
    """One broker, one load, MOVES leadership moves; returns the per-move measurements."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    props: dict[str, Any] = {"num.io.threads": IO_THREADS, "listeners": "PLAINTEXT://127.0.0.1:0"}
    if control_plane:
        props.update({"listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
                      "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                      "control.plane.listener.name": "CONTROLLER"})
    import tempfile

    workdir = Path(tempfile.mkdtemp(prefix="pw-kip291-"))
    moves: list[tuple[int, float, float]] = []  # (partition, send wall ms, response ms)
    counts = {"acked": 0, "failed": 0}
    with broker_process(props, workdir) as (ports, _pid):
        bs = f"127.0.0.1:{ports['PLAINTEXT']}"
        admin = AdminClient({"bootstrap.servers": bs})
        topic = NewTopic(TOPIC, PARTITIONS, 1, config={"message.timestamp.type": "LogAppendTime"})
        for f in admin.create_topics([topic]).values():
            f.result(30)
        ctl = RawClient(ports["CONTROLLER" if control_plane else "PLAINTEXT"])
        ctl.call(_update_metadata(ports["PLAINTEXT"]))
        stop = threading.Event()
        load = threading.Thread(target=_load, args=(bs, stop, counts), daemon=True)
        load.start()
        time.sleep(WARMUP_S)
        for k in range(MOVES):
            send_ms = time.time() * 1000
            t0 = time.perf_counter()
            frame = ctl.call(_leader_and_isr(100 + k, k))
            elapsed_ms = (time.perf_counter() - t0) * 1000
            _corr, resp = decode_response(4, 4, frame)
            assert resp["error_code"] == 0, resp
            moves.append((k, send_ms, elapsed_ms))
            time.sleep(MOVE_INTERVAL_S)
        time.sleep(TAIL_S)
        stop.set()
        load.join(30)
        ctl.close()
    # the broker is gone (clean shutdown): read the moved partitions' append times back
    results = []
    manager = LogManager([workdir / "data"])
    manager.startup()
    try:
        for partition, send_ms, elapsed_ms in moves:
            log = manager.get_log(TopicPartition(TOPIC, partition))
            assert log is not None
            data = log.read(0, (1 << 31) - 1).records
            after = [(b.max_timestamp, b.record_count) for b in parse_batches(data) if b.max_timestamp >= send_ms]
            accepted = sum(n for _ts, n in after)
            window = max((ts for ts, _n in after), default=send_ms) - send_ms
            results.append({"partition": partition, "window_ms": window, "accepted": accepted,
                            "response_ms": elapsed_ms})
    finally:
        manager.shutdown()
    return {"moves": results, **counts}


def _summary(name: str, r: dict[str, Any]) -> None:
    windows = [m["window_ms"] for m in r["moves"]]
    accepted = [m["accepted"] for m in r["moves"]]
    resp = [m["response_ms"] for m in r["moves"]]
    print(f"{name:<18} stop-accepting after send: median {statistics.median(windows):7.1f} ms, max "
          f"{max(windows):7.1f} ms | records accepted in the window: median {statistics.median(accepted):6.0f}, "
          f"max {max(accepted):6.0f} | LeaderAndIsr response median {statistics.median(resp):7.1f} ms, "
          f"max {max(resp):7.1f} ms | load acked {r['acked']}, failed {r['failed']}")


def main() -> None:
    """Both modes in one run, then the comparison."""
    print(f"KIP-291 leadership move under acks=all load: {PRODUCERS} producers, {PARTITIONS} partitions, "
          f"num.io.threads={IO_THREADS}, {MOVES} moves per mode")
    on = run_mode(True)
    off = run_mode(False)
    _summary("control plane on", on)
    _summary("control plane off", off)
    on_w = statistics.mean(m["window_ms"] for m in on["moves"])
    off_w = statistics.mean(m["window_ms"] for m in off["moves"])
    on_n = sum(m["accepted"] for m in on["moves"])
    off_n = sum(m["accepted"] for m in off["moves"])
    print(f"mean window: on {on_w:.1f} ms, off {off_w:.1f} ms; records accepted after the controller's send "
          f"(all moves): on {on_n}, off {off_n}")


if __name__ == "__main__":
    main()
