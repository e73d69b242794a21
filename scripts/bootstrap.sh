#!/usr/bin/env bash
# Create or update the project's virtual environment (.venv) on a fresh machine.
# Installs what the project needs outside PyPI with apt-get when missing:
#   - Java 17 (Spark's JVM), from Debian's openjdk-17-jre-headless
#   - kcat (Debian package kafkacat), an independent Kafka client the tests use
#   - chromium (Debian), the headless browser of the dashboard test
#   - Maven (Debian), which fetches the JVM artifacts of jvm/pom.xml (Apache Kafka, the JMX exporter agent,
#     spark-sql-kafka, delta-spark) into .jvm/ (skipped when already there)
#   - Prometheus (with promtool) and Alertmanager (Debian's prometheus, prometheus-alertmanager): the anchors
#     of benchmarks.versus_prometheus, which starts them itself on 127.0.0.1 (the packages' services are unused)
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v java >/dev/null 2>&1 || need_apt+=(openjdk-17-jre-headless)
command -v kcat >/dev/null 2>&1 || command -v kafkacat >/dev/null 2>&1 || need_apt+=(kafkacat)
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need_apt+=(chromium)
command -v mvn >/dev/null 2>&1 || need_apt+=(maven)
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || need_apt+=(prometheus-alertmanager)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "bootstrap: installing ${need_apt[*]} with apt-get"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

PY=${PYTHON:-}
if [ -z "$PY" ]; then
    for cand in python3.11 python3; do
        if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
            PY=$cand; break
        fi
    done
fi
[ -n "$PY" ] || { echo "bootstrap: Python 3.11 is required" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade "pip>=25.1"
.venv/bin/python -m pip install -q -e . --group dev
.venv/bin/python -m planewatch.kafka.artifacts fetch || { echo "bootstrap: fetching the JVM artifacts failed (above)" >&2; exit 1; }
touch .venv/.installed
echo "bootstrap: .venv ready ($(.venv/bin/python --version), java: $(java -version 2>&1 | head -1))"
