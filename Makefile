# planewatch: `make help` lists the targets.
.DEFAULT_GOAL := help
VENV := .venv
STAMP := $(VENV)/.installed
PW := $(VENV)/bin/planewatch
export SPARK_LOCAL_IP ?= 127.0.0.1
export PYSPARK_PYTHON := $(CURDIR)/$(VENV)/bin/python
export PYSPARK_DRIVER_PYTHON := $(CURDIR)/$(VENV)/bin/python
export GX_ANALYTICS_ENABLED := False

$(STAMP): pyproject.toml uv.lock scripts/bootstrap.sh jvm/pom.xml planewatch/kafka/artifacts.py
	bash scripts/bootstrap.sh

.PHONY: help venv demo test test-fast test-newest lock lock-upgrade lint broker benchmarks cluster-up cluster-down

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

venv: $(STAMP) ## create or update .venv (installs Java 17 and kcat with apt-get when missing)

demo: $(STAMP) ## the main job: planewatch demo on embedded defaults
	$(PW) demo

test: $(STAMP) ## the whole test suite (unit, Spark, broker and client integration)
	$(VENV)/bin/python -m pytest

test-fast: $(STAMP) ## unit tests only (no Spark, no processes)
	$(VENV)/bin/python -m pytest -m "not spark and not streaming and not integration and not slow"

test-newest: $(STAMP) ## the whole suite on the newest versions pyproject's bounds allow (.venv-newest; the lock unchanged)
	bash scripts/test_newest.sh

# uv alone, at scripts/bootstrap.sh's version: re-locking must not need the bootstrap, which refuses a stale lock
$(VENV)/bin/uv:
	python3.11 -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check "uv==$$(sed -n 's/^UV_VERSION=//p' scripts/bootstrap.sh)"

lock: | $(VENV)/bin/uv ## re-resolve uv.lock after a pyproject change, keeping locked versions where they still fit
	$(VENV)/bin/uv lock --python $(VENV)/bin/python
	bash scripts/bootstrap.sh

lock-upgrade: | $(VENV)/bin/uv ## move uv.lock to the newest allowed versions, install them and run the whole suite
	$(VENV)/bin/uv lock --upgrade --python $(VENV)/bin/python
	bash scripts/bootstrap.sh
	$(VENV)/bin/python -m pytest

lint: $(STAMP) ## ruff check, mypy --strict (the code is formatted by hand to 120 columns, not by ruff format)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy planewatch broker pipelines schemas api jobs lake

broker: $(STAMP) ## run the reference broker from conf/broker.properties
	$(PW) broker --config conf/broker.properties

benchmarks: $(STAMP) ## run every benchmark and print the numbers
	$(VENV)/bin/python -m benchmarks

cluster-up: $(STAMP) ## start a local Spark standalone cluster on 127.0.0.1:7077 (master + 1 worker)
	$(VENV)/bin/python -m jobs.run.local_cluster up --dir var/spark-cluster --port 7077

cluster-down: ## stop the local Spark standalone cluster
	$(VENV)/bin/python -m jobs.run.local_cluster down --dir var/spark-cluster
