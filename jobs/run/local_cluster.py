"""A Spark standalone cluster on 127.0.0.1 from the pip installation (SPARK-RECIPES section 11).

    python -m jobs.run.local_cluster up   [--dir var/spark-cluster] [--port 7077] [--workers 1] [--cores 2]
                                          [--memory 2g] [--pin]
    python -m jobs.run.local_cluster down [--dir var/spark-cluster]
    (or: make cluster-up / make cluster-down)

The pip wheel has no start-master.sh, but `bin/spark-class` starts both daemons. `up` starts a master and
`--workers` workers of `--cores` cores and `--memory` each (each its own process group, pids in DIR/*.pid, logs in
DIR/*.log), waits until every worker registered, and prints the master URL for
`spark-submit --master spark://127.0.0.1:PORT jobs/ingest_logs.py ...`. `--pin` binds worker i to CPUs
[i*cores, (i+1)*cores) of this machine (Linux CPU affinity, inherited by its executors and their Python workers),
so a measurement per worker is a measurement per core. `down` kills exactly those pids.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pyspark

__all__ = ["LocalCluster", "spark_home", "start_cluster", "stop_cluster", "worker_cpus"]

# The master and worker JVMs take 5-30 s to come up on a loaded 2-core machine.
START_TIMEOUT_S = 180.0


def spark_home() -> str:
    """SPARK_HOME of the installed pyspark package."""
    return os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)


@dataclass(frozen=True)
class LocalCluster:
    """A running local standalone cluster."""

    master_url: str
    directory: str
    master_pid: int
    worker_pids: tuple[int, ...]
    cpus: tuple[tuple[int, ...], ...] = ()  # each worker's CPUs when pinned

    @property
    def worker_pid(self) -> int:
        """The first worker's pid."""
        return self.worker_pids[0]


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": spark_home(),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
        "SPARK_NO_DAEMONIZE": "1",
    }


def _spawn(args: list[str], log: Path, cpus: tuple[int, ...] = ()) -> int:
    def pin() -> None:  # in the child before exec: the JVM and everything it starts run on these CPUs only
        if cpus:
            os.sched_setaffinity(0, cpus)

    with log.open("ab") as out:
        proc = subprocess.Popen(
            [os.path.join(spark_home(), "bin", "spark-class"), *args],
            env=_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=pin if cpus else None,  # affinity only: nothing that takes a lock
        )
    return proc.pid


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def worker_cpus(workers: int, cores: int) -> tuple[tuple[int, ...], ...]:
    """The CPUs of each of `workers` pinned workers of `cores` cores, in order over this machine's CPUs (a machine
    with fewer CPUs than asked for wraps around: workers then share)."""
    available = sorted(os.sched_getaffinity(0))
    return tuple(tuple(available[(w * cores + c) % len(available)] for c in range(cores)) for w in range(workers))


def start_cluster(directory: str, port: int = 0, cores: int = 2, memory: str = "2g", workers: int = 1,
                  pin: bool = False) -> LocalCluster:
    """Start a master and `workers` workers of `cores` cores and `memory` each on 127.0.0.1 (`pin`: each worker on
    its own CPUs, worker_cpus); returns when every worker has registered with the master."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    web = _free_port()
    url = f"spark://127.0.0.1:{port}"
    mlog = d / "master.log"
    master = _spawn(
        ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port), "--webui-port",
         str(web)],
        mlog,
    )  # fmt: skip
    (d / "master.pid").write_text(str(master))
    cpus = worker_cpus(workers, cores) if pin else ()
    pids = []
    for w in range(workers):
        wlog = d / f"worker-{w}.log"
        pid = _spawn(
            ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores", str(cores), "--memory",
             memory, "--webui-port", str(_free_port()), "--work-dir", str(d / "work" / f"worker-{w}"), url],
            wlog, cpus[w] if cpus else (),
        )  # fmt: skip
        (d / f"worker-{w}.pid").write_text(str(pid))
        pids.append(pid)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if mlog.exists() and mlog.read_text(errors="replace").count("Registering worker") >= workers:
            return LocalCluster(url, str(d), master, tuple(pids), cpus)
        time.sleep(0.5)
    stop_cluster(directory)
    raise RuntimeError(f"the local Spark cluster did not come up in {START_TIMEOUT_S:.0f} s; see {d}/*.log")


def stop_cluster(directory: str) -> None:
    """Kill the master and worker started by `start_cluster` in `directory` (by their recorded pids)."""
    for f in [*sorted(Path(directory).glob("worker*.pid")), Path(directory) / "master.pid"]:
        if not f.exists():
            continue
        pid = int(f.read_text().strip())
        try:
            os.killpg(pid, signal.SIGTERM)
            for _ in range(50):
                os.killpg(pid, 0)
                time.sleep(0.1)
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        f.unlink()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jobs.run.local_cluster", description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("up", "down"))
    parser.add_argument("--dir", default="var/spark-cluster")
    parser.add_argument("--port", type=int, default=7077)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--cores", type=int, default=2, help="per worker")
    parser.add_argument("--memory", default="2g", help="per worker")
    parser.add_argument("--pin", action="store_true", help="each worker on its own CPUs")
    args = parser.parse_args(argv)
    if args.action == "down":
        stop_cluster(args.dir)
        print(f"stopped the cluster of {args.dir}")
        return 0
    c = start_cluster(args.dir, args.port, args.cores, args.memory, args.workers, args.pin)
    pinned = f"; CPUs {list(c.cpus)}" if c.cpus else ""
    print(f"master {c.master_url} (pids {c.master_pid}, {list(c.worker_pids)}{pinned}; logs in {c.directory})")
    print(f"  spark-submit --master {c.master_url} jobs/ingest_logs.py --config conf/pipeline.yaml --once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
