"""KIP-291 benchmark: LeaderAndIsr latency under a saturating data-plane load, control plane on vs off.

One run, two brokers (child processes, 127.0.0.1), identical load:

* the broker's metadata cache gets PARTITIONS partitions (UpdateMetadata), so every Metadata-for-all-topics answer
  is large and costly to build;
* LOAD_CONNECTIONS clients send such Metadata requests back to back (one in flight each) to a broker with
  IO_THREADS handler threads: the data-plane request queue stays full;
* a controller sends SAMPLES one-partition LeaderAndIsr v2 requests, one every PROBE_INTERVAL_S, to the control
  listener (control plane on) or to the data listener (off, as before KIP-291), and records each response time.

Prints p50/p99 per mode and the ratio (target: on is >= 50x lower at p99). Bounded: SAMPLES probes per mode.
Run: .venv/bin/python -m benchmarks.control_plane_isolation
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from typing import Any

from benchmarks.broker_support import (
    RawClient,
    broker_process,
    leader_and_isr_wire,
    metadata_wire,
    percentile,
    raise_fd_limit,
    update_metadata_wire,
)

PARTITIONS = 4000
TOPICS = 40
LOAD_CONNECTIONS = 128
IO_THREADS = 1
SAMPLES = 30
PROBE_INTERVAL_S = 0.1
WARMUP_S = 2.0
PROBE_TIMEOUT_S = 120.0
MODE_DEADLINE_S = 150.0  # stop probing a mode after this long (off mode: each probe waits seconds)


def _load(data_port: int, stop: Any, completed: Any) -> None:
    """LOAD_CONNECTIONS threads sending Metadata(all topics) back to back until ``stop`` is set."""

    def one() -> None:
        client = RawClient(data_port, timeout=PROBE_TIMEOUT_S)
        wire = metadata_wire(1)
        try:
            while not stop.is_set():
                client.call(wire)
                with completed.get_lock():
                    completed.value += 1
        except OSError:
            pass
        finally:
            client.close()

    threads = [threading.Thread(target=one, daemon=True) for _ in range(LOAD_CONNECTIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PROBE_TIMEOUT_S)


def run_mode(control_plane: bool) -> tuple[list[float], int]:
    props: dict[str, object] = {
        "listeners": "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "num.io.threads": IO_THREADS,
        "num.network.threads": 3,
    }
    if control_plane:
        props["control.plane.listener.name"] = "CONTROLLER"
    with broker_process(props) as (ports, _pid):
        data_port = ports["PLAINTEXT"]
        probe_port = ports["CONTROLLER"] if control_plane else data_port
        setup = RawClient(probe_port)
        setup.call(update_metadata_wire(PARTITIONS, TOPICS, data_port))
        setup.close()
        stop = multiprocessing.Event()
        completed = multiprocessing.Value("q", 0)
        # The load runs in another process so the probing process (this one) is idle apart from the probe: its own
        # GIL does not add to the measured latency.
        loader = multiprocessing.Process(target=_load, args=(data_port, stop, completed), daemon=True)
        loader.start()
        time.sleep(WARMUP_S)
        controller = RawClient(probe_port, timeout=PROBE_TIMEOUT_S)
        latencies: list[float] = []
        try:
            deadline = time.monotonic() + MODE_DEADLINE_S
            for i in range(SAMPLES):
                if time.monotonic() > deadline:
                    break
                wire = leader_and_isr_wire(100 + i, 10 + i, data_port)
                start = time.perf_counter()
                controller.call(wire)
                latencies.append((time.perf_counter() - start) * 1000)
                time.sleep(PROBE_INTERVAL_S)
        finally:
            stop.set()
            controller.close()
            loader.join(PROBE_TIMEOUT_S)
            if loader.is_alive():
                loader.kill()
                loader.join(5)
        return latencies, int(completed.value)


def main() -> None:
    raise_fd_limit(4096)
    print(f"control-plane isolation: {PARTITIONS} partitions in the metadata cache, {LOAD_CONNECTIONS} connections "
          f"sending Metadata(all topics) back to back, num.io.threads={IO_THREADS}, {SAMPLES} LeaderAndIsr probes")
    results = {}
    for mode, flag in (("on", True), ("off", False)):
        lat, metadata_done = run_mode(flag)
        results[mode] = lat
        print(f"  control plane {mode:<3}: {len(lat)} probes, LeaderAndIsr p50 {percentile(lat, 50):9.2f} ms  "
              f"p99 {percentile(lat, 99):9.2f} ms  max {max(lat):9.2f} ms  (Metadata answered meanwhile: "
              f"{metadata_done})")
    ratio = percentile(results["off"], 99) / percentile(results["on"], 99)
    print(f"  p99 off/on ratio: {ratio:.1f}x (target >= 50x)")


if __name__ == "__main__":
    main()
