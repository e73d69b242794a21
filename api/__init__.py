"""The REST service and dashboard over the lake (FastAPI; reads Delta through lake/, never Spark).

* `main` (`create_app`, its lifespan), `settings` (PLANEWATCH_* environment), `deps` (the store, the bearer-token
  guard, query-parameter rules shared by every route); `routes/`: one router per resource; `metrics` (the API's
  own metrics and the lake's open incidents and alerts for Prometheus: GET /metrics);
* `store` (the lake's tables: handles, in-memory snapshots per version, DataFusion queries), `snapshots` (how a
  snapshot is prepared and refreshed), `memo` (answers kept while their inputs stay the same), `queries` (pure
  filters, cursors, SQL), `readonly_sql` (SQL that can only read: `planewatch sql`), `panels` (the dashboard's SQL
  files under sql/), `models` (the response models);
* `incident_index`, `alertmanager`, `push`: alerts in Alertmanager's shape, pushed to one; `roll_safety` (the verdict
  from the lake and the cluster), `roll_awareness` (the rolls of the lake, the `expected` mark of alerts, declared
  rolls), `kafka_admin` (a cluster described through Kafka's Admin API), `kafka_sasl` (the SASL login of its
  DescribeQuorum connection: PLAIN, SCRAM), `cluster_info` (GET /cluster), `public_paths` (paths shown relative,
  never absolute).
"""

from __future__ import annotations

__all__: list[str] = []
