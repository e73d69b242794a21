"""lake.storage on its own: what is remote, how locations join, which client a URI gets, listing and deleting on the
local file system (the object store side: tests/streaming/test_object_store_lake.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pytest

from lake import LakeError
from lake.storage import check_lake, delete_tree, filesystem, is_remote, join, list_files


@pytest.mark.parametrize(("uri", "remote"), [("var/lake", False), ("/abs/lake", False), ("file:///abs/lake", False),
                                             ("s3://bucket/lake", True), ("gs://bucket/lake", True)])
def test_only_an_object_store_uri_is_remote(uri: str, remote: bool) -> None:
    assert is_remote(uri) is remote


def test_a_uri_stays_a_uri_when_joined_and_a_path_joins_as_a_path() -> None:
    assert join("s3://bucket/lake/", "raw_logs", "/staged/") == "s3://bucket/lake/raw_logs/staged"
    assert join("/abs/lake", "raw_logs") == "/abs/lake/raw_logs"
    assert join(Path("/abs/lake"), "raw_logs") == "/abs/lake/raw_logs"  # a directory given as a Path


def test_a_local_location_gets_the_local_file_system_and_its_absolute_path(tmp_path: Path) -> None:
    fs, path = filesystem(f"file://{tmp_path}/t")
    assert isinstance(fs, pafs.LocalFileSystem)
    assert path == f"{tmp_path}/t"


def test_an_object_store_not_spoken_is_refused_with_the_ones_that_are() -> None:
    with pytest.raises(LakeError, match=r"s3://"):
        filesystem("gs://bucket/lake")


def test_list_and_delete_a_tree(tmp_path: Path) -> None:
    (tmp_path / "t" / "a=1").mkdir(parents=True)
    (tmp_path / "t" / "a=1" / "f.parquet").write_bytes(b"12345")
    assert list(list_files(str(tmp_path / "t"))) == [(str(tmp_path / "t" / "a=1" / "f.parquet"), 5)]
    assert list(list_files(str(tmp_path / "missing"))) == []
    delete_tree(str(tmp_path / "t"))
    delete_tree(str(tmp_path / "t"))  # gone already: nothing to do
    assert not (tmp_path / "t").exists()


def test_a_local_lake_needs_no_check_and_a_scheme_not_spoken_is_refused_before_any_table(tmp_path: Path) -> None:
    check_lake(str(tmp_path / "not-yet-created"))  # the pipeline creates it
    with pytest.raises(LakeError, match=r"not gs://"):
        check_lake("gs://bucket/lake")
