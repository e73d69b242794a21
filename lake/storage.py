"""Where a table lives: a local (or NFS) directory, or an object store (`s3://bucket/prefix`).

A lake on an object store is reached with the credentials and endpoint of the environment, as the AWS tools read
them: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL` (an S3-compatible server),
`AWS_ALLOW_HTTP` (a plain-HTTP endpoint) and `AWS_CONDITIONAL_PUT=etag` (commits as conditional puts: the store
refuses a second writer of the same Delta log version). delta-rs and pyarrow both read them, so the driver, the
executors' Python workers (they inherit the environment, or `spark.executorEnv.*` on a cluster) and the API agree.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from urllib.parse import unquote

import pyarrow.fs as pafs

from lake import LakeError

__all__ = ["OBJECT_STORE_ENV", "OBJECT_STORE_SCHEMES", "check_lake", "delete_tree", "file_location", "filesystem",
           "is_remote", "join", "list_files", "object_store_env"]

# The object stores the lake may live on (delta-rs and pyarrow both speak them).
OBJECT_STORE_SCHEMES = ("s3",)


# The environment an object store client reads (its endpoint, keys and transport): a client is kept per value.
OBJECT_STORE_ENV = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                    "AWS_REGION", "AWS_ALLOW_HTTP", "AWS_CONDITIONAL_PUT", "AWS_EC2_METADATA_DISABLED")


def object_store_env() -> tuple[str | None, ...]:
    """The values of OBJECT_STORE_ENV in this process's environment."""
    return tuple(os.environ.get(k) for k in OBJECT_STORE_ENV)


def is_remote(uri: str) -> bool:
    """Whether `uri` names an object store location (not a path or a `file://` URI)."""
    return "://" in uri and not uri.startswith("file://")


def file_location(uri: str) -> str:
    """A location as pyarrow opens it, from a path or a URI as delta-rs spells it (`file_uris`, `table_uri`:
    percent-encoded, local ones as `file://` URIs): a local path, or the object store URI."""
    return unquote(uri.removeprefix("file://"))


def join(base: str | os.PathLike[str], *parts: str) -> str:
    """`base` and `parts` joined by `/` (a URI stays a URI; a path is joined as os.path does)."""
    base = os.fspath(base)
    if not is_remote(base):
        return os.path.join(base, *parts)
    return "/".join([base.rstrip("/"), *(p.strip("/") for p in parts if p)])


@functools.lru_cache(maxsize=8)
def _object_store(scheme: str, bucket: str, _environment: tuple[str | None, ...]) -> pafs.FileSystem:
    if scheme not in OBJECT_STORE_SCHEMES:
        raise LakeError(f"the lake may live on a local path or {', '.join(s + '://' for s in OBJECT_STORE_SCHEMES)}"
                        f", not {scheme}://")
    fs, _ = pafs.FileSystem.from_uri(f"{scheme}://{bucket}")  # the environment's endpoint and keys
    return fs


def filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """(pyarrow file system, path within it) of `uri`: the local file system for a path or `file://` URI, the
    object store (one client per process and scheme) for a remote one."""
    if not is_remote(uri):
        return pafs.LocalFileSystem(), os.path.abspath(uri.removeprefix("file://"))
    scheme, _, rest = uri.partition("://")
    return _object_store(scheme, rest.split("/", 1)[0], object_store_env()), rest.rstrip("/")


def check_lake(uri: str) -> None:
    """Nothing for a local lake or a reachable bucket; LakeError saying what is wrong with an object store lake
    (a scheme not spoken, a bucket that does not exist, a store that cannot be reached or refuses the keys) before
    any table is opened, instead of the first write's store error."""
    if not is_remote(uri):
        return
    fs, path = filesystem(uri)
    bucket = path.split("/", 1)[0]
    where = os.environ.get("AWS_ENDPOINT_URL") or "AWS's endpoint for AWS_REGION"
    try:
        info = fs.get_file_info(bucket)
    except OSError as exc:
        raise LakeError(f"cannot reach the lake {uri} at {where}: {exc} (the store's endpoint and keys come from "
                        f"{', '.join(OBJECT_STORE_ENV[:5])})") from exc
    if info.type == pafs.FileType.NotFound:
        raise LakeError(f"the lake {uri}: bucket {bucket!r} does not exist at {where} (create it first)")


def list_files(uri: str) -> Iterator[tuple[str, int]]:
    """(URI, size) of every file under `uri`, recursively (nothing when it does not exist)."""
    fs, path = filesystem(uri)
    scheme = uri.partition("://")[0] + "://" if is_remote(uri) else ""
    for info in fs.get_file_info(pafs.FileSelector(path, recursive=True, allow_not_found=True)):
        if info.type == pafs.FileType.File:
            yield scheme + info.path, int(info.size or 0)


def delete_tree(uri: str) -> None:
    """Remove everything under `uri` (nothing when it does not exist)."""
    fs, path = filesystem(uri)
    try:
        fs.delete_dir(path)
    except FileNotFoundError:
        pass
