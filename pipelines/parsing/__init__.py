"""Parsers for Kafka's own log and metric formats: ONE engine over Arrow record batches.

* :func:`pipelines.parsing.engine.run_engine` - bronze rows in, silver rows per table, quarantine rows (stage and
  reason), unused rows and per-route counts out; the hard quality rules included. The driver runs it on small
  batches, the executors through ``mapInArrow`` (jobs.ingest.staging), ``planewatch parse`` on
  files.
* :data:`EVENTS` - canonical ``event`` names of ``state_change_events``; :data:`SIGNALS` - canonical metric signals.

Every format is declared once, as data: :mod:`pipelines.parsing.patterns` (log layouts and messages) and
:mod:`pipelines.parsing.metric_names` / :mod:`pipelines.parsing.metric_spec` (metric names and formats).

Modules: `engine` (the engine and its routing), `engine_logs` and `engine_metrics` (the log and metric halves),
`stages` (constants, lookups and expressions both parsers share), `patterns`, `metric_names`, `metric_spec` (the
format tables), `rust_regex` (the declared regexes in the dialect of the regex crate polars runs).
"""

from __future__ import annotations

from pipelines.parsing.metric_names import SIGNALS
from pipelines.parsing.patterns import EVENTS

__all__ = ["EVENTS", "SIGNALS"]
