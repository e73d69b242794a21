"""The broker's network layer (Kafka's ``SocketServer`` and ``RequestChannel``), data and control planes apart
(KIP-291), with a fair acceptor and bounded per-processor connection queues (KIP-402).

* `socket_server` (acceptors, processors and request channels of both planes), `acceptor` (one listener's acceptor
  and KIP-402's assignment rule), `processor` (one selector, many connections), `idle` (a selector's io-wait ratio:
  the IdlePercent gauges), `quotas` (per-IP, per-listener and broker-wide connection limits);
* `channel` (the bounded request queue and the response queues), `request` (the contract with the request
  handlers), `handler` (the request handler threads);
* `request_metrics` (RequestMetrics, updated when a response is sent), `request_log` (kafka-request.log's JSON);
* `client` (a blocking client connection for the broker's own outbound channels).
"""

from __future__ import annotations

__all__: list[str] = []
