"""Apache Kafka itself, run here: its artifacts, its clusters, the files operators write, and incidents on it.

* `artifacts` (the Maven-fetched jars: Kafka per version, the JMX exporter, Spark's Kafka and Delta jars),
  `configs` (server.properties, log4j and exporter files as text), `exporters` (the JMX exporter set-ups),
  `cluster` (ZooKeeper-mode or KRaft clusters on 127.0.0.1), `cgroup` (CPU starvation of a process);
* `runs` (a cluster for a run's length, admin clients, topics), `scenarios` (the incidents caused on it),
  `rolls` (rolling restarts, timed or gated by roll-check), `expected` (what each run injects and what must catch
  it); `shipper` (rsyslog shipping the brokers' log files into a Kafka topic, one rsyslogd per host), `prometheus`
  (an operator's Prometheus scraping the exporters: its configuration, start and stop, history backfilled).
"""

from __future__ import annotations

__all__: list[str] = []
