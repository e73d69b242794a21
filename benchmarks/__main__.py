"""`python -m benchmarks [NAME ...]`: run every benchmark module (or the named ones), one process each, in order.

A benchmark is a module of this package with an ``if __name__ == "__main__":`` block; helpers (e.g.
``broker_support``) have none and are skipped. Each runs as ``python -m benchmarks.<name>`` so it gets a fresh
interpreter (benchmarks raise limits, start brokers and Spark); a failing one is reported and the rest still run.
The benchmarks of ON_REQUEST run only when named.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Benchmarks that run for an hour or more (the soak runs planewatch for two by default; the catch-up writes an
# hour of Kafka output first) or half of one (the fleet: a logging Kafka, an object store, a Spark cluster and two
# runs): only when named, e.g. `python -m benchmarks soak`.
ON_REQUEST = ("soak", "catch_up", "fleet")


def discover() -> list[str]:
    """Names of the benchmark modules, sorted."""
    return sorted(
        p.stem for p in HERE.glob("*.py")
        if not p.stem.startswith("_") and 'if __name__ == "__main__":' in p.read_text(encoding="utf-8")
    )


def main(argv: list[str]) -> int:
    names = argv or [n for n in discover() if n not in ON_REQUEST]
    unknown = sorted(set(names) - set(discover()))
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; available: {', '.join(discover())}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f"== benchmarks.{name}", flush=True)
        rc = subprocess.run([sys.executable, "-m", f"benchmarks.{name}"], check=False).returncode
        if rc != 0:
            failed.append(name)
            print(f"== benchmarks.{name} failed with exit code {rc}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
