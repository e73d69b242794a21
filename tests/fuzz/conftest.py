"""Hypothesis profiles of the fuzz tests; ``ci`` is loaded unless HYPOTHESIS_PROFILE names another.

* ``ci`` (default; ``make test`` and CI): derandomized (the same examples on every run, no example database), each
  test's example budget as written, generous deadlines (a loaded 2-core machine runs several suites at once). The
  whole directory takes about a minute.
* ``long``: a local fuzzing session, random and remembered (the example database under .hypothesis/), 50 times
  the examples, no deadline::

      HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest -p no:cacheprovider tests/fuzz

  A failure prints the shrunk example and a ``@reproduce_failure`` line; make a regression test of it.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from tests.fuzz.budget import PROFILE

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=5000,  # ms per example; an example takes milliseconds, a hang or quadratic path takes seconds
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],  # generation speed varies with the machine's load
)
settings.register_profile(
    "long",
    derandomize=False,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(PROFILE)

