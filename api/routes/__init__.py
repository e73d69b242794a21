"""The service's routers, one module per resource.

`alerts` (GET /alerts, /alerts/{id}), `incidents` (GET /incidents, /incidents/{id}), `brokers` (GET /brokers and a
broker's metrics), `control_requests` (GET /control-requests), `cluster` (GET /cluster),
`clusters` (GET /clusters: each cluster's last input and open alerts), `roll_safety` (GET
/clusters/{cluster}/roll-safety), `rolls` (GET and POST /clusters/{cluster}/rolls: declared and seen rolls),
`alertmanager` (GET /api/v2/alerts), `runbook` (GET /runbook/{type}), `dashboard`
(GET / and /panels/{panel}), `docs` (GET /docs), `metrics` (GET /metrics: Prometheus text), `health` (GET /health,
open).
"""

from __future__ import annotations

__all__: list[str] = []
