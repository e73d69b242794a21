"""The pipeline's settings and its lake, as the tests build and read them.

* `pipeline_settings`: a run's Settings under one directory (its lake and checkpoints), a YAML-shaped mapping
  merged over that, through `jobs.run.settings.parse_settings` (the validation a config file gets).
* `stage_and_commit`: a batch appended as the ingest job appends it (staged files, one commit);
* `lake_table` and `lake_rows`: a Delta table of a lake as the readers of the lake read it, through
  `lake.read` (plain types whatever a writer chose: a MERGE writes `string_view`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

    from jobs.run.settings import Settings
    from lake.sink import DeltaSink, SinkResult


def _merged(base: Mapping[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in more.items():
        old = out.get(key)
        out[key] = _merged(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return out


def pipeline_settings(root: Path, *, once: bool = True, files: Path | None = None,
                      max_bytes_per_batch: int | None = None, **sections: Any) -> Settings:
    """Settings with the lake at ``root/lake`` and the checkpoints at ``root/ck``; ``once``: one trigger and stop;
    ``files``: the file source's directory (and its ``max_bytes_per_batch``); ``sections``: more of the mapping
    (``sink={...}``, ``sources={...}``, ``quality={...}``), merged key by key over the above."""
    from jobs.run.settings import parse_settings

    raw: dict[str, Any] = {"lake": str(root / "lake"), "checkpoints": str(root / "ck")}
    if once:
        raw["trigger"] = {"once": True}
    if files is not None:
        raw["sources"] = {"files": {"path": str(files)}}
        if max_bytes_per_batch is not None:
            raw["sources"]["files"]["max_bytes_per_batch"] = max_bytes_per_batch
    return parse_settings(_merged(raw, sections), "test")


def lake_table(lake: Path | str, name: str, columns: list[str] | None = None) -> pa.Table:
    """The rows of the table ``name`` of ``lake`` (a directory or an object store URI: its current snapshot), in plain
    types; ``columns``: only those."""
    from deltalake import DeltaTable

    from lake.read import read_table, table_schema
    from lake.storage import join

    dt = DeltaTable(join(str(lake), name))
    table = read_table(dt, table_schema(dt))
    return table if columns is None else table.select(columns)


def lake_rows(lake: Path | str, name: str) -> list[dict[str, Any]]:
    """`lake_table` as a list of rows."""
    rows: list[dict[str, Any]] = lake_table(lake, name).to_pylist()
    return rows


def stage_and_commit(sink: DeltaSink, data: pa.Table, batch_id: int) -> SinkResult:
    """Append `data` to the sink's table as batch `batch_id` the way the ingest job does: staged as Parquet files per
    partition under the sink's pending directory (jobs.ingest.staging.PartitionFiles), then committed (a replay stages
    nothing)."""
    from jobs.ingest.staging import PartitionFiles
    from lake.sink import SinkResult

    pending = sink.open_pending(batch_id)
    if pending is None:
        return SinkResult(sink.table.name, batch_id, True, mode=sink.mode)
    files = PartitionFiles(sink.table, pending)
    files.write(data)
    files.close()
    return sink.commit_pending(pending, batch_id)
