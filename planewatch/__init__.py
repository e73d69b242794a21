"""planewatch: the CLI that wires the reference broker (broker/) and the analytics (jobs/, pipelines/, api/).

The two halves share no code; only this package and the demo import both.

* `cli` (the `planewatch` console script), `commands/` (one module per command), `demo/` (`planewatch demo`),
  `kafka/` (Apache Kafka run here), `objectstore` (an S3 server for the lake, s3proxy, run here), `docs_config`
  (docs/configuration.md generated from the code).
"""

from __future__ import annotations

__all__ = ["__version__"]
__version__ = "0.1.0"
