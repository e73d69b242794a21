"""Detection: control-request pairing, detectors for every alert type, baselines, the alert lifecycle and incidents.

Pure functions only (polars and Arrow in and out, plain Python for pairing state and the lifecycle); the log and
metric families' micro-batches (jobs/detect/rules.py) run them over their rows and write gold.

* pairing: `events` (silver rows -> pairing events), `pairing` (one key's state machine), `pairing_records` (a
  request's event and record), `pairing_groups` (a batch's groups stepped, their state values), `in_flight`
  (requests reported while stuck), `latency_rows` (a request's durations and id);
* the rules: `registry` (every alert type's family, input, detector functions and default levels, and the runs
  of the rules over each input), `latency_detectors` (the paired requests' rules), `log_detectors` (the log lines'
  rules), `kraft_detectors` (KRaft's controller lines), `metric_detectors` (windows, rollups and the metric rules),
  `request_metrics` (Kafka's RequestMetrics), `roll_detectors` (ROLL_TOO_FAST), `candidates` (what every rule
  shares: its inputs, frames, evidence, levels), `config` (every threshold and limit as configured);
* after the rules: `baselines` and `metric_baselines` (an alert against its peers and its own history), `lifecycle`
  (candidates -> alert rows), `incidents` and `impact` (alerts -> incidents with a cause, an impact and an action).
"""

from __future__ import annotations

__all__: list[str] = []
