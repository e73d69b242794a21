"""The reference Kafka broker: Kafka's designs for the control plane, in Python, speaking Kafka's wire protocol,
metric names and log4j formats (docs/reference-broker.md). It shares no code with the analytics.

* the server: `server` (KafkaServer: wiring), `network/` (acceptors, processors, request channel, handlers: the data
  and control planes of KIP-291 and KIP-402), `protocol/` (the sans-IO wire protocol), `apis/` (the request
  handlers), `purgatory` (delayed produce and fetch);
* the broker's state and data: `state/` (partition roles, the metadata cache, epochs, replicaStateChangeLock),
  `log/` (the partition log), `fetcher/` (replica fetchers, the KAFKA-6974 lock), `controller/` (the controller's
  send threads and request batches), `cluster/` (the reference cluster: a controller and broker processes);
* its surface: `metrics/` (Kafka-named metrics and their Prometheus endpoint), `log4j` (Kafka's log4j layouts and
  appenders), `scenarios/` (incident scenarios on the reference cluster);
* its configuration: `config`, `config_table` (every key, once), `configdef` (one key's definition), `settings`
  (typed views per subsystem), `properties` (Java .properties syntax), `meta_properties` (meta.properties);
* shared pieces: `topic_partition` (the partition key), `lifecycle` (stop signals, children that die with their
  parent).
"""

from __future__ import annotations

__all__: list[str] = []
