"""Pure transformations of the analytics: Arrow and polars in and out, no Spark session, no I/O.

* `parsing/`: the one parse-and-validate engine and the pattern tables of Kafka's log and metric formats;
* `quality/`: the silver tables' expectation suites (hard rules in the engine, Great Expectations on samples);
* `detection/`: pairing, every alert type's detector, baselines, the alert lifecycle and incidents;
* `roll_safety`: the roll-safety verdict of one cluster at one moment; `restart_probe`: what restarting one node
  would do, from the cluster's own description (partitions, ISR, the controller quorum); `roll_awareness`: the rolls
  stop lines and roll_steps show, and whether an alert is what a roll in progress causes (expected, not paged).
"""

from __future__ import annotations

__all__: list[str] = []
