"""The readers the streaming queries read their records from, and what a query's checkpoint says of its batches.

* `streams`: the PySpark Python streaming data sources `planewatch_files` (a tree of growing, rotating Kafka log and
  metric files) and `planewatch_kafka` (topics), and the raw-record schema they produce;
* `file_tail`: the file source's reader (byte ranges of growing and rotated files); `entries` (regular files
  only), `paths` (what a file is: family, kind, cluster, broker), `record_split` (the one line splitter),
  `time_align` (a backlog read up to one log time);
* `kafka_stream` (Spark's `kafka` source or `planewatch_kafka`), `kafka_records` (Kafka records -> raw records),
  `envelopes` (a log shipper's JSON around the line, and the mapping rules naming each record's cluster and broker),
  `dedup` (shipped records delivered twice kept once), `kafka_security` (SASL_SSL and mTLS to a secured cluster);
* `prometheus_source` (`planewatch_prometheus`: live exporters scraped every trigger), `scrape` (the HTTP scrapes),
  `scrape_pacing` (each target's timeout and back-off); `prometheus_server` (`planewatch_prometheus_server`: the
  operator's Prometheus read through its query API), `prometheus_query` (its window, query and label mapping);
  `secrets` (a password or token named by the settings, read where a client is made);
* `checkpoints` (a query's run id and Spark's offset log read back), `file_accounting` (what a file batch left out).

No module here transforms data or opens a Delta table.
"""

from __future__ import annotations

__all__: list[str] = []
