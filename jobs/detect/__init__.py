"""Detection inside a family's micro-batch, over the rows it just committed: the I/O around pipelines/detection.

* `rules`: `LogRules` (the log family: pairing, then the log rules) and `MetricRules` (the metric family: 1-minute
  rollups, then the metric rules over sliding windows), and `SilverBatch`, what a batch hands them;
* `pairing`: `LogPairing`, the pairing state (table `pairing_state`) and the per-cluster event-time clock;
* `alerts`: `AlertSink`, the process's one writer of `alerts` (and, through `incidents`, of `incidents`), and
  `AlertWriter`, a query's hand into it;
* `incidents`: alerts -> incidents, regrouped after each alerts MERGE;
* `roll_judge`: `RollJudge`, ROLL_TOO_FAST over the batch's shutdown lines once their cluster's samples reach them
  (the ones still waiting recorded in the checkpoint); `roll_inputs`: what it reads of the lake around a shutdown;
* `latency_history`: `LatencyHistory`, the baseline window of completed control requests kept between batches;
* `recent_lines`: `RecentLines`, the state-change lines the latency rules read around a request, kept likewise;
  `cluster_window`: `ClusterWindow`, what the two share (rows kept per cluster, read by time span);
* `recorded`: `BatchRecords`, what a batch read or carried, kept in its query's checkpoint for a replay or a restart.
"""

from __future__ import annotations

__all__: list[str] = []
