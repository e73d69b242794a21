"""Ad-hoc SQL over the lake that can only read, by construction: what `planewatch sql` runs.

Theory of operation
-------------------
The engine is DataFusion (the one delta-rs embeds for the API's own queries), driven here through its Python
bindings because they expose what delta-rs's ``QueryBuilder`` does not: the session's SQL options and the logical
plan. Whatever the text looks like (comments, case, CTEs, ``EXPLAIN ANALYZE`` around a statement, several
statements), three things hold before a single batch is produced:

1. **The session can only see the lake.** It holds the lake's Delta tables registered by name and nothing else:
   no URL tables (``SELECT * FROM '/etc/passwd'``), no file table functions (``read_csv``), no catalogs. Reads
   outside the lake are refused on purpose: the command is the lake's query tool, and a file reader hidden in it
   would turn every script or service that passes SQL through it into a way to read the host's files.
2. **The engine's own check.** The statement is planned with ``SQLOptions`` that refuse DDL (CREATE/DROP of
   tables, views, functions, external tables), DML (INSERT/UPDATE/DELETE/MERGE/TRUNCATE and COPY ... TO) and
   statements (SET, PREPARE/EXECUTE, transactions). DataFusion verifies every node of the plan, subqueries and the
   statement an ``EXPLAIN [ANALYZE]`` wraps included, and parses one statement only. SQL DataFusion has no plan
   for (ATTACH, INSTALL, LOAD, PRAGMA, CREATE SECRET/MACRO) fails to plan at all.
3. **Only read operators.** The logical plan is walked and every node must be a relational read operator
   (`READ_PLAN_NODES`); a node kind that is not on the list, e.g. one a newer DataFusion adds, is refused rather
   than trusted.

``EXPLAIN ANALYZE`` of a read still runs (it reads the lake); of anything else it is refused at step 2.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from lake.read import to_plain

__all__ = [
    "READ_PLAN_NODES",
    "NotReadOnly",
    "SqlError",
    "check_plan",
    "read_only_session",
    "run_read_only",
]

# The logical plan nodes a query that only reads is made of (DataFusion's LogicalPlan variants, by their Python
# names). Absent on purpose: CopyTo, DmlStatement, every Create*/Drop*, SetVariable, Prepare/Execute, the
# transaction statements, and Extension (no extension is registered, so none can be a read we know).
READ_PLAN_NODES = frozenset({
    "Aggregate",
    "Analyze",  # EXPLAIN ANALYZE: runs its input, which is checked like any other node
    "DescribeTable",
    "Distinct",
    "EmptyRelation",
    "Explain",
    "Filter",
    "Join",
    "Limit",
    "Projection",
    "RecursiveQuery",
    "Repartition",
    "Sort",
    "Subquery",
    "SubqueryAlias",
    "TableScan",
    "Union",
    "Unnest",
    "Values",
    "Window",
})
# Plan nodes walked at most: a legitimate query has a few dozen operators; a plan past this is refused rather
# than walked without end.
MAX_PLAN_NODES = 10_000
# What DataFusion's SQLOptions check says when it refuses a plan (datafusion/core SQLOptions::verify_plan).
_REFUSED = re.compile(r"(DDL|DML|Statement) not supported: ?(.*)")


class SqlError(Exception):
    """The SQL could not be planned or run (a syntax error, an unknown column or table)."""


class NotReadOnly(SqlError):
    """The SQL plans as something other than a read: nothing of it ran."""


def check_plan(plan: Any) -> None:
    """Raise NotReadOnly unless every node of `plan` (a datafusion LogicalPlan) is in READ_PLAN_NODES."""
    todo = [plan]
    seen = 0
    while todo:
        node = todo.pop()
        seen += 1
        if seen > MAX_PLAN_NODES:
            raise NotReadOnly(f"the plan has more than {MAX_PLAN_NODES} nodes")
        try:
            kind = type(node.to_variant()).__name__
        except Exception as e:  # a variant the bindings cannot even name is not one we know to be a read
            raise NotReadOnly(f"a plan node of unknown kind ({_first_line(e)})") from e
        if kind not in READ_PLAN_NODES:
            raise NotReadOnly(f"{kind} is not a read")
        todo.extend(node.inputs())


def read_only_session(tables: Mapping[str, Any]) -> Any:
    """A DataFusion SessionContext holding only `tables` (name -> deltalake.DeltaTable)."""
    from datafusion import SessionConfig, SessionContext

    # information_schema: SHOW TABLES / SHOW COLUMNS answer from the registered tables; url tables stay off.
    ctx = SessionContext(SessionConfig().with_information_schema(True))
    for name, table in tables.items():
        ctx.register_table(name, table)
    return ctx


def _plan(ctx: Any, sql: str) -> Any:
    from datafusion import SQLOptions

    options = SQLOptions().with_allow_ddl(False).with_allow_dml(False).with_allow_statements(False)
    try:
        df = ctx.sql_with_options(sql, options)
    except Exception as e:
        reason = _first_line(e).removeprefix("Error during planning: ")
        m = _REFUSED.match(reason)
        if m:
            raise NotReadOnly(f"{m.group(1)} ({m.group(2) or 'statement'}) is not a read") from e
        raise SqlError(reason) from e
    check_plan(df.logical_plan())
    return df


def run_read_only(ctx: Any, sql: str, max_rows: int) -> tuple[pa.Table, bool]:
    """Plan `sql` in `ctx` (see `read_only_session`), refuse anything but a read, and run it.

    Returns the first `max_rows` rows, in plain types (DataFusion answers strings as string_view: lake.read),
    and whether the query produced more (reading stops there).

    Raises:
        NotReadOnly: the statement is not a read (nothing ran).
        SqlError: it could not be planned or run.
    """
    df = _plan(ctx, sql)
    schema = df.schema()
    batches: list[pa.RecordBatch] = []
    rows = 0
    try:
        for batch in _batches(df):
            batches.append(batch)
            rows += batch.num_rows
            if rows > max_rows:
                break
    except Exception as e:
        raise SqlError(_first_line(e)) from e
    table = pa.Table.from_batches(batches, batches[0].schema if batches else schema)
    return to_plain(table.slice(0, max_rows)), rows > max_rows


def _batches(df: Any) -> Iterator[pa.RecordBatch]:
    for batch in df.execute_stream():
        yield batch.to_pyarrow()


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
