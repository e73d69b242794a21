"""`planewatch sql` runs only what DataFusion plans as a read: the known bypasses write nothing and say why."""

from __future__ import annotations

from pathlib import Path

import pytest

from api.readonly_sql import NotReadOnly, check_plan, read_only_session, run_read_only
from planewatch.cli import main
from tests.api.lake import ALERTS, CONTROL_REQUEST_LATENCY, alert, control_request, write


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    d = tmp_path / "lake"
    write(d, ALERTS, [alert(i) for i in range(5)])
    write(d, CONTROL_REQUEST_LATENCY, [control_request(1, 1, 30.0)])
    return d


def _tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


# {out} is a path in the test's own directory: no statement may create it.
BYPASSES = [
    # EXPLAIN ANALYZE runs the statement it explains: a .pth file runs code at Python's next start.
    "EXPLAIN ANALYZE COPY (SELECT 'import os' AS line) TO '{out}' STORED AS CSV",
    "explain   analyze\n\tcopy (select 1 as a) to '{out}' stored as csv",
    "EXPLAIN COPY (SELECT 1 AS a) TO '{out}' STORED AS CSV",
    "EXPLAIN VERBOSE COPY (SELECT 1 AS a) TO '{out}' STORED AS CSV",
    "EXPLAIN ANALYZE INSERT INTO alerts SELECT * FROM alerts",
    "COPY (SELECT * FROM alerts) TO '{out}' STORED AS PARQUET",
    "COPY alerts TO '{out}' STORED AS CSV",
    "/* a comment first */ COPY (SELECT 1 AS a) TO '{out}'",
    "-- a line comment\nSELECT 1 AS a; COPY (SELECT 1 AS a) TO '{out}'",
    "SELECT 1 AS a; COPY (SELECT 1 AS a) TO '{out}'",
    "SELECT 1 AS a;\n;COPY (SELECT 1 AS a) TO '{out}'",
    "WITH x AS (SELECT 1 AS a) COPY (SELECT * FROM x) TO '{out}'",
    "WITH x AS (SELECT 1 AS a) INSERT INTO alerts SELECT * FROM alerts",
    "cOpY (SELECT 1 AS a) TO '{out}'",
    "INSERT INTO alerts SELECT * FROM alerts",
    "UPDATE alerts SET severity = 'info'",
    "DELETE FROM alerts",
    "TRUNCATE alerts",
    "MERGE INTO alerts USING alerts s ON alerts.alert_id = s.alert_id WHEN MATCHED THEN DELETE",
    "CREATE TABLE t AS SELECT * FROM alerts",
    "CREATE VIEW v AS SELECT * FROM alerts",
    "CREATE EXTERNAL TABLE x (a VARCHAR) STORED AS CSV LOCATION '{out}'",
    "DROP TABLE alerts",
    "SET datafusion.execution.target_partitions = 1",
    "PREPARE p AS SELECT * FROM alerts",
    "ATTACH '{out}' AS other",
    "INSTALL httpfs",
    "LOAD httpfs",
    "PRAGMA enable_external_access",
    "CREATE MACRO m(a) AS a",
    "CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')",
    "CREATE FUNCTION f(a INT) RETURNS INT RETURN 1",
]

# Files outside the lake are not read: the session holds only the lake's tables (see api.readonly_sql).
OUTSIDE_READS = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_parquet('/etc/passwd')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM \"/etc/passwd\"",
    "CREATE EXTERNAL TABLE p (line VARCHAR) STORED AS CSV LOCATION '/etc/passwd'",
]


@pytest.mark.parametrize("template", BYPASSES)
def test_bypass_writes_nothing(lake: Path, tmp_path: Path, template: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out" / "evil.pth"
    out.parent.mkdir()
    before = _tree(lake)
    assert main(["sql", template.format(out=out), "--lake", str(lake)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("planewatch sql: "), err
    assert not any((tmp_path / "out").iterdir()), "a statement wrote a file"
    assert _tree(lake) == before, "the lake changed"


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("EXPLAIN ANALYZE COPY (SELECT 1 AS a) TO '/nonexistent/x.csv'", "read-only: DML (COPY) is not a read"),
        ("INSERT INTO alerts SELECT * FROM alerts", "refused, read-only: DML (Insert Into) is not a read"),
        ("DROP TABLE alerts", "refused, read-only: DDL (DropTable) is not a read"),
        ("SET datafusion.execution.target_partitions = 1", "refused, read-only: Statement (SetVariable) is not a read"),
        ("SELECT 1; SELECT 2", "only supports a single SQL statement"),
        ("ATTACH 'x.db' AS y", "Unsupported SQL statement"),
    ],
)
def test_refusal_is_clear(lake: Path, query: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", query, "--lake", str(lake)]) == 2
    assert says in capsys.readouterr().err


@pytest.mark.parametrize("query", OUTSIDE_READS)
def test_no_read_outside_the_lake(lake: Path, query: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", query, "--lake", str(lake), "--format", "csv"]) == 2
    out, err = capsys.readouterr()
    assert "root:" not in out
    assert err.startswith("planewatch sql: ")


@pytest.mark.parametrize(
    ("query", "expect"),
    [
        ("WITH open AS (SELECT * FROM alerts WHERE status = 'open') SELECT count(*) AS n FROM open", '"n": 5'),
        ("/* why */ select COUNT(*) AS n FROM alerts -- trailing comment\n;", '"n": 5'),
        ("EXPLAIN SELECT count(*) FROM alerts", '"plan_type": "logical_plan"'),
        ("EXPLAIN ANALYZE SELECT count(*) FROM alerts", "Plan with Metrics"),
        ("DESCRIBE alerts", '"column_name": "alert_id"'),
        ("SELECT a.alert_id FROM alerts a JOIN control_request_latency c ON a.broker_id = c.broker_id "
         "WHERE a.alert_id IN (SELECT max(alert_id) FROM alerts) UNION ALL SELECT 'x'", '"alert_id": "x"'),
        ("VALUES (1, 'a')", '"column1": 1'),
    ],
)
def test_reads_still_run(lake: Path, query: str, expect: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql", query, "--lake", str(lake), "--format", "json"]) == 0
    assert expect in capsys.readouterr().out


def test_plan_walk_refuses_writes_the_options_would_let_through(tmp_path: Path) -> None:
    """The plan walk stands on its own: plans made in a permissive session (DataFusion's defaults) are refused."""
    from datafusion import SessionContext

    ctx = SessionContext()
    ctx.sql("CREATE TABLE t AS VALUES (1)").collect()
    out = tmp_path / "x.csv"
    for sql in (f"COPY (SELECT 1) TO '{out}' STORED AS CSV", "INSERT INTO t VALUES (2)",
                f"EXPLAIN ANALYZE COPY (SELECT 1) TO '{out}' STORED AS CSV"):
        with pytest.raises(NotReadOnly, match="is not a read"):
            check_plan(ctx.sql(sql).logical_plan())
    check_plan(ctx.sql("SELECT * FROM t WHERE column1 IN (SELECT 1)").logical_plan())
    assert not out.exists()


def test_row_cap_reports_more(lake: Path) -> None:
    from deltalake import DeltaTable

    ctx = read_only_session({"alerts": DeltaTable(str(lake / "alerts"))})
    table, more = run_read_only(ctx, "SELECT alert_id FROM alerts ORDER BY alert_id", 3)
    assert table.column("alert_id").to_pylist() == ["a00000", "a00001", "a00002"]
    assert more
    table, more = run_read_only(ctx, "SELECT alert_id FROM alerts", 5)
    assert (table.num_rows, more) == (5, False)
