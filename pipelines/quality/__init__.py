"""Data quality of the silver tables: Great Expectations suites versioned in `suites/<table>.json`.

Two uses of the same suite (SPARK-RECIPES section 7: GE on Spark costs ~2 s per batch, on pandas ~0.16 s):

* `rules.split_valid_arrow(table, suite)`: the hard row-level expectations as polars expressions, over EVERY
  silver row of the batch, inside the parse engine; a failing row leaves silver for `quarantine` (stage
  `validate`, reason = the first expectation it failed).
* `gx.validate_sample(pdf, suite)`: Great Expectations itself (offline, ephemeral context, pandas path) on a bounded
  sample of the batch; its results go to the `dq_results` table.

Modules: `rules` (suites and the hard rules), `gx` (Great Expectations on a sample); `suites/` the suites' JSON.
"""

from __future__ import annotations

from pipelines.quality.rules import Expectation, Suite, load_suite, split_valid_arrow

__all__ = ["Expectation", "Suite", "load_suite", "split_valid_arrow"]
