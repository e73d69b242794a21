"""Ingest Kafka logs (state-change, request, server, controller) into bronze/silver/quarantine Delta tables.
Each micro-batch also pairs the control requests of its lines (control_request_latency, pairing_state) and runs the
log rules over its rows (jobs.detect.rules), writing `alerts`; `--no-detect` leaves that out.

    spark-submit --master 'local[2]' jobs/ingest_logs.py --config conf/pipeline.yaml [--once] [--input DIR ...]
    spark-submit --master spark://127.0.0.1:7077 jobs/ingest_logs.py --config conf/pipeline.yaml --once

(With the venv not activated, set PYSPARK_PYTHON=.venv/bin/python; see README.) The analytics packages are
zipped and shipped to the executors automatically on a non-local master (jobs.run.session), so no --py-files.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from jobs.run.runner import main

    sys.exit(main(sys.argv[1:], families=("logs",), app="planewatch-ingest-logs"))
