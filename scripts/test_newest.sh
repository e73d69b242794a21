#!/usr/bin/env bash
# The whole test suite on the newest versions pyproject.toml's bounds allow, in .venv-newest (uv.lock unchanged):
# run before `make lock-upgrade`, so that the next incompatible release of a library is seen here first.
# Arguments go to pytest (e.g. `bash scripts/test_newest.sh tests/jobs -x`).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/uv ] || bash scripts/bootstrap.sh
export UV_PYTHON_DOWNLOADS=never
NEWEST=.venv-newest
[ -x "$NEWEST/bin/python" ] || .venv/bin/uv venv -q --python .venv/bin/python "$NEWEST"
# Resolved now, from the index, ignoring uv.lock: the newest versions within the bounds.
.venv/bin/uv pip install -q --python "$NEWEST/bin/python" --upgrade -e . --group dev
echo "test-newest: versions that differ from uv.lock:"
# pip and setuptools are the seed of `python -m venv`, not of the lock: left out of the comparison.
seedless() { .venv/bin/uv pip list --python "$1" --format freeze | grep -Ev '^(pip|setuptools)==' | sort; }
seedless .venv/bin/python >"$NEWEST/locked.txt"
seedless "$NEWEST/bin/python" >"$NEWEST/newest.txt"
if cmp -s "$NEWEST/locked.txt" "$NEWEST/newest.txt"; then
    echo "  (none: the lock is at the newest allowed versions)"
else
    diff "$NEWEST/locked.txt" "$NEWEST/newest.txt" | grep '^[<>]' || true
fi
export PYSPARK_PYTHON="$PWD/$NEWEST/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/$NEWEST/bin/python"
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}" GX_ANALYTICS_ENABLED=False
exec "$NEWEST/bin/python" -m pytest "$@"
