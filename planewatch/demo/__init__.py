"""`planewatch demo`: `plan` (what it runs and how it scores, pure), `processes` (its child processes: the API, the
pipeline, one scenario at a time), `watch` (the alert watcher polling the API), `shipping` (the logging Kafka
cluster the Apache Kafka runs ship their logs to, and the pipeline's settings reading it), `metrics_path` (the
Prometheus scraping their exporters, which the pipeline reads) and `runner` (the whole loop).
"""

from __future__ import annotations

__all__: list[str] = []
