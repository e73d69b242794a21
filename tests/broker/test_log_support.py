"""Helpers shared by the test_log_* modules (no tests here): batch builders, server.log capture, log factories."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import cramjam
import crc32c

from broker.log import LogConfig, TopicPartition, build_batch
from broker.log.log import Log
from broker.log4j import Log4j

TP = TopicPartition("events", 0)
_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] (?P<rest>.*)$")


def batch(n: int = 3, *, ts: int = 1_000, step: int = 1, size: int = 20, tag: int = 0) -> bytes:
    """An uncompressed v2 batch of ``n`` keyed records (record timestamps ts, ts+step, ...)."""
    return build_batch([(f"k{tag}-{i}".encode(), bytes([65 + (tag + i) % 26]) * size) for i in range(n)],
                       base_timestamp=ts, timestamp_step=step)


def compress(raw_batch: bytes, codec: int) -> bytes:
    """The same batch with its records compressed (1 gzip, 2 snappy raw, 3 lz4 frame, 4 zstd)."""
    records = raw_batch[61:]
    packed = {1: cramjam.gzip.compress, 2: cramjam.snappy.compress_raw, 3: cramjam.lz4.compress,
              4: cramjam.zstd.compress}[codec](records)
    head = bytearray(raw_batch[:61])
    struct.pack_into(">h", head, 21, codec)
    body = bytes(head[21:]) + bytes(packed)
    struct.pack_into(">i", head, 8, len(head) - 12 + len(bytes(packed)))
    struct.pack_into(">I", head, 17, crc32c.crc32c(body))
    return bytes(head[:21]) + body


def base_offsets(records: bytes) -> list[int]:
    """BaseOffset of every batch in ``records``."""
    out, pos = [], 0
    while pos < len(records):
        base, length = struct.unpack_from(">qi", records, pos)
        out.append(base)
        pos += length + 12
    return out


def new_log4j(tmp: Path) -> Log4j:
    """A private log4j hierarchy writing server.log into ``tmp/logs``."""
    return Log4j().configure(tmp / "logs", utc=True)


def server_log(logs: Log4j) -> list[str]:
    """server.log lines without their ``[timestamp] `` prefix."""
    logs.flush()
    assert logs.logs_dir is not None
    text = (logs.logs_dir / "server.log").read_text(encoding="utf-8")
    out = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            out.append(m.group("rest"))
    return out


def open_log(root: Path, config: LogConfig | None = None, logs: Log4j | None = None, **kw: object) -> Log:
    """A Log for ``events-0`` under ``root``."""
    return Log(root / str(TP), TP, config or LogConfig(), log4j=logs or Log4j(), **kw)  # type: ignore[arg-type]
