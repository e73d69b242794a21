#!/usr/bin/env bash
# Create or update the project's virtual environment (.venv) on a fresh machine, exactly as uv.lock says.
# Installs what the project needs outside PyPI with apt-get when missing:
#   - Java 17 (Spark's JVM), from Debian's openjdk-17-jre-headless
#   - kcat (Debian package kafkacat), an independent Kafka client the tests use
#   - chromium (Debian), the headless browser of the dashboard test
#   - Maven (Debian), which fetches the JVM artifacts of jvm/pom.xml (Apache Kafka, the JMX exporter agent,
#     spark-sql-kafka, delta-spark) into .jvm/ (skipped when already there)
#   - rsyslog and rsyslog-kafka (omkafka): the shipper of the shipped log path
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
# rsyslog with omkafka: the log shipper of the shipped path (jobs.sources.envelopes' rsyslog envelope); started by
# planewatch itself on 127.0.0.1-only ports (the package's own service is unused)
[ -x /usr/sbin/rsyslogd ] || need_apt+=(rsyslog)
ls /usr/lib/*/rsyslog/omkafka.so >/dev/null 2>&1 || need_apt+=(rsyslog-kafka)
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

# The Python set is exactly uv.lock (runtime, test, lint and tools groups; Python 3.11; Linux), installed by uv at
# the version the lock was written with (pyproject.toml's [tool.uv] required-version and its `tools` group).
UV_VERSION=0.13.9
export UV_PYTHON_DOWNLOADS=never  # the machine's Python 3.11, never one uv would download
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
if ! .venv/bin/uv --version 2>/dev/null | grep -qx "uv $UV_VERSION"; then
    .venv/bin/python -m pip install -q --disable-pip-version-check "uv==$UV_VERSION"
fi
if ! .venv/bin/uv lock --check --python .venv/bin/python >/dev/null 2>.venv/lock-check.log; then
    cat .venv/lock-check.log >&2
    echo "bootstrap: uv.lock does not match pyproject.toml (a dependency was changed without re-locking)." >&2
    echo "bootstrap: run 'make lock' to re-resolve within the bounds, or 'make lock-upgrade' to take the newest" >&2
    echo "bootstrap: allowed versions; commit uv.lock with the change (docs/dependencies.md)." >&2
    exit 1
fi
.venv/bin/uv sync --frozen --python .venv/bin/python
.venv/bin/python -m planewatch.kafka.artifacts fetch || { echo "bootstrap: fetching the JVM artifacts failed (above)" >&2; exit 1; }
touch .venv/.installed
echo "bootstrap: .venv ready ($(.venv/bin/python --version), java: $(java -version 2>&1 | head -1))"
