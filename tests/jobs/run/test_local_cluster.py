"""jobs.run.local_cluster's CPU plan for pinned workers (the cluster: tests/streaming/test_standalone_cluster)."""

from __future__ import annotations

import os

from jobs.run.local_cluster import worker_cpus


def test_each_pinned_worker_gets_its_own_cpus_in_order() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    plan = worker_cpus(len(cpus), 1)
    assert [c for (c,) in plan] == cpus  # one CPU each, none shared


def test_more_cores_than_the_machine_has_wrap_around() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    plan = worker_cpus(2, len(cpus))
    assert plan[0] == tuple(cpus)
    assert plan[1] == tuple(cpus)  # the second worker shares: said by the plan, not hidden
