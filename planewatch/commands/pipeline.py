"""`planewatch pipeline [--once] --input DIR --lake DIR --checkpoints DIR`: the streaming jobs, locally.

Ingestion of logs and metrics (files, Kafka topics and/or live Prometheus endpoints, conf/pipeline.yaml) into the
Delta tables, one streaming query per input family and source, each micro-batch also pairing control requests and
running its family's rules (jobs/detect/rules.py), in one SparkSession (master local[2] by default, Spark UI off,
loopback only). `--scrape CLUSTER_JSON` (repeatable) scrapes the exporters a planewatch cluster.json lists on
every trigger. `--once` processes what is there (one scrape per endpoint) and stops; otherwise the queries run
until Ctrl-C.
"""

from __future__ import annotations

import argparse
import logging
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    from jobs.run.settings import add_arguments

    add_arguments(parser)
    parser.add_argument("--master", help="Spark master (default spark.master of the config: local[2])")
    parser.add_argument("--no-detect", action="store_true", help="ingestion only: no rule runs, no alert is written")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every micro-batch")


def run(args: argparse.Namespace) -> int:
    from jobs import PipelineIOError
    from jobs.run.settings import load_settings
    from lake import LakeError

    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("jobs").setLevel(logging.INFO)
    try:
        settings = load_settings(args.config, args)
    except PipelineIOError as exc:
        print(f"planewatch pipeline: {exc}", file=sys.stderr)
        return 2
    from broker.lifecycle import deferred_stop_signals
    from jobs.run.runner import run_pipeline
    from jobs.run.session import build_session

    spark = None
    try:
        with deferred_stop_signals():  # a stop while the JVM starts would leave it running without its driver
            spark = build_session(settings, "planewatch-pipeline")
        spark.sparkContext.setLogLevel("ERROR")
        rc = run_pipeline(spark, settings, detection=not args.no_detect)
    except (PipelineIOError, LakeError) as exc:
        print(f"planewatch pipeline: {exc}", file=sys.stderr)
        return 1
    finally:
        if spark is not None:
            spark.stop()
    print(f"planewatch pipeline: done, tables under {settings.lake}", file=sys.stderr)
    return rc
