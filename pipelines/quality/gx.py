"""Great Expectations (1.x, offline, ephemeral context, pandas path) on a bounded sample of a batch."""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading
import time
from typing import Any

from pipelines.quality.rules import Suite
from schemas.dq import DqResult

__all__ = ["prepare", "prepare_in_background", "validate_sample"]

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
_CTX: dict[str, Any] = {}


def _import_gx() -> Any:
    """great_expectations, imported so that a failed import raises ImportError.

    Its import pulls in pyspark.sql.connect, which calls sys.exit(0) when it believes it runs doctests (a `python -c`
    main module) and grpc is missing. Inside a foreachBatch callback a SystemExit would end py4j's callback thread
    without an answer, and the streaming query would wait for it forever."""
    try:
        # lazy: great_expectations takes 2.1-2.9 s to import (measured), only a GX sample needs it; SystemExit: above
        import great_expectations as gx
    except SystemExit as exc:
        raise ImportError(f"importing great_expectations exited ({exc.code}): pyspark.sql.connect's checks") from exc
    return gx


def _context() -> Any:
    # GE must never phone home; its tqdm bars would flood the job's stderr.
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("TQDM_DISABLE", "1")
    if "ctx" not in _CTX:
        gx = _import_gx()

        ctx = gx.get_context(mode="ephemeral")
        # lazy: a great_expectations module (2.1-2.9 s to import, measured), loaded by _import_gx just before
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
        try:
            ctx.enable_analytics(False)
        except Exception:
            pass
        _CTX["ctx"] = ctx
        _CTX["asset"] = ctx.data_sources.add_pandas(name="planewatch").add_dataframe_asset(name="batch")
        _CTX["defs"] = {}
        _CTX["suites"] = {}
    return _CTX["ctx"]


def _suite_and_def(suite: Suite) -> tuple[Any, Any]:
    gx = _import_gx()
    # lazy: a great_expectations module (2.1-2.9 s to import, measured), loaded by _import_gx just before
    from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

    ctx = _context()
    if suite.name not in _CTX["suites"]:
        gx_suite = ctx.suites.add(gx.ExpectationSuite(name=suite.name))
        for e in suite.expectations:
            gx_suite.add_expectation(ExpectationConfiguration(type=e.type, kwargs=e.kwargs).to_domain_obj())
        _CTX["suites"][suite.name] = gx_suite
        _CTX["defs"][suite.name] = _CTX["asset"].add_batch_definition_whole_dataframe(suite.name)
    return _CTX["suites"][suite.name], _CTX["defs"][suite.name]


def prepare(suites: list[Suite]) -> None:
    """Import GE and build the context and these suites now (seconds on first use), not in the first batch."""
    with _LOCK:
        for suite in suites:
            _suite_and_def(suite)


def prepare_in_background(suites: list[Suite]) -> threading.Thread:
    """`prepare` in a daemon thread: the driver's Python waits on the JVM during a query's first batch anyway."""

    def run() -> None:
        try:
            prepare(suites)
        except Exception:  # validate_sample reports the same error in dq_results when it is used
            log.warning("Great Expectations could not be prepared", exc_info=True)

    thread = threading.Thread(target=run, name="gx-prepare", daemon=True)
    thread.start()
    return thread


def validate_sample(pdf: Any, suite: Suite, table: str, batch_id: int) -> list[DqResult]:
    """Validate a pandas DataFrame with the suite; one dq_results row per expectation.

    Expectations on columns the frame lacks are skipped. `element_count` is the sample size.
    """
    t0 = time.perf_counter()
    run_ts = dt.datetime.now(dt.UTC)
    with _LOCK:  # one GE context per process; foreachBatch of several queries may run concurrently
        gx_suite, batch_def = _suite_and_def(suite)
        result = batch_def.get_batch(batch_parameters={"dataframe": pdf}).validate(gx_suite)
    elapsed = (time.perf_counter() - t0) * 1e3

    # GE rewrites row_condition; identify an expectation by its type, column and bounds instead.
    def norm(v: Any) -> str:
        return str(float(v)) if isinstance(v, int | float) and not isinstance(v, bool) else str(v)

    def key(type_: str, kw: Any) -> tuple[str, ...]:
        return (type_, *(norm(kw.get(k)) for k in ("column", "min_value", "max_value", "value_set", "regex")))

    names = {key(e.type, e.kwargs): e.name for e in suite.expectations}
    rows: list[DqResult] = []
    for r in result.results:
        cfg = r.expectation_config
        kw = cfg.kwargs
        name = names.get(key(cfg.type, kw), cfg.type)
        res = r.result or {}
        rows.append(DqResult(
            table_name=table,
            batch_id=batch_id,
            suite=suite.name,
            expectation=name,
            success=bool(r.success),
            unexpected_count=int(res.get("unexpected_count") or 0),
            element_count=int(res.get("element_count") or len(pdf)),
            run_ts=run_ts,
            duration_ms=elapsed,
        ))
    return rows
