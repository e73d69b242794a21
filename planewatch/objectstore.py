"""An S3-compatible object store on 127.0.0.1 for the lake: s3proxy (Apache-2.0, Maven Central; the `s3` set of
planewatch.kafka.artifacts) serving a local directory, as the tests, the demo and the benchmarks run it.

`ObjectStore` starts it (a free port, its own directory, the bucket created first, the first signed request
awaited) and stops it whatever happens (a context manager). `env()` is what every planewatch process that reads or
writes the lake needs in its environment (lake.storage): the endpoint, the keys, plain HTTP, conditional puts.
s3proxy honours `If-None-Match: *` on PUT, so two writers of one Delta log version cannot both win.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from types import TracebackType

import pyarrow.fs as pafs

from planewatch.demo.processes import Child, free_port
from planewatch.kafka.artifacts import s3proxy_jar

__all__ = ["ObjectStore", "ObjectStoreError"]

# s3proxy answers within 1-2 s on an idle machine; a loaded 2-core machine with Kafka and Spark up is slower.
START_TIMEOUT_S = 60.0
# It holds no state of its own (the files are the objects): stopped at once.
STOP_TIMEOUT_S = 5.0
# Heap of the server: its footprint stays near 170 MB with this cap through the suite's tables.
HEAP = "-Xmx192m"
POLL_S = 0.2


class ObjectStoreError(RuntimeError):
    """The object store did not start."""


class ObjectStore:
    """s3proxy on 127.0.0.1 serving `root/data` (one directory a bucket); a context manager that stops it."""

    def __init__(self, root: Path, bucket: str = "planewatch") -> None:
        self.root = root
        self.bucket = bucket
        self.access_key = "planewatch"
        self.secret_key = secrets.token_hex(16)
        self.url = ""
        self._child: Child | None = None

    def env(self) -> dict[str, str]:
        """The environment a process reading or writing the lake on this store needs."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": self.secret_key, "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
                "AWS_CONDITIONAL_PUT": "etag", "AWS_EC2_METADATA_DISABLED": "true"}

    def uri(self, *parts: str) -> str:
        """`s3://<bucket>/<parts...>`."""
        return "/".join([f"s3://{self.bucket}", *(p.strip("/") for p in parts)])

    def start(self) -> ObjectStore:
        """Start the server with the bucket in place; returns once a signed listing of the bucket answers."""
        data = self.root / "data"
        (data / self.bucket).mkdir(parents=True, exist_ok=True)
        port = free_port(0)
        self.url = f"http://127.0.0.1:{port}"
        conf = self.root / "s3proxy.conf"
        conf.write_text(f"s3proxy.endpoint={self.url}\ns3proxy.authorization=aws-v2-or-v4\n"
                        f"s3proxy.identity={self.access_key}\ns3proxy.credential={self.secret_key}\n"
                        f"jclouds.provider=filesystem\njclouds.filesystem.basedir={data}\n")
        os.chmod(conf, 0o600)
        self._child = Child("s3proxy", ["java", HEAP, "-XX:+UseSerialGC", "-jar", str(s3proxy_jar()),
                                        "--properties", str(conf)], self.root / "s3proxy.log", dict(os.environ))
        try:
            self._await_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _await_ready(self) -> None:
        fs = pafs.S3FileSystem(access_key=self.access_key, secret_key=self.secret_key, region="us-east-1",
                               endpoint_override=self.url, scheme="http", connect_timeout=2, request_timeout=5)
        deadline = time.monotonic() + START_TIMEOUT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._child is not None and not self._child.alive():
                raise ObjectStoreError(f"s3proxy exited: see {self.root / 's3proxy.log'}")
            try:
                fs.get_file_info(pafs.FileSelector(self.bucket, allow_not_found=True))
                return
            except OSError as exc:
                last = exc
                time.sleep(POLL_S)
        raise ObjectStoreError(f"s3proxy did not answer within {START_TIMEOUT_S:g} s: {last}")

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop(STOP_TIMEOUT_S)
            self._child = None

    def __enter__(self) -> ObjectStore:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
