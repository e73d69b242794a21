"""The run around the queries: settings, the SparkSession, the pipeline's loop and the lake's maintenance.

* `settings`: typed pipeline settings from conf/pipeline.yaml and the command line;
* `session`: the SparkSession (local, or spark-submit's master, loopback only), the packages shipped to executors;
* `jars`: the JVM packages a session may load (spark-sql-kafka, delta-spark);
* `runner`: `run_pipeline`, the families' queries until done (--once) or stopped, restarted from their checkpoints;
* `maintenance`: `Maintainer`, the lake maintenance thread (lake.maintenance does the work);
* `observability`: the pipeline's own metrics for Prometheus (batches, records, input lag, commits, maintenance runs),
  served by the runner when `observability.metrics_port` is set;
* `local_cluster`: a Spark standalone cluster on 127.0.0.1 (`make cluster-up`).
"""

from __future__ import annotations

__all__: list[str] = []
