"""kcat (Debian's kafkacat 1.7, librdkafka) against the reference broker: metadata, produce, consume (issue 3)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from broker.log import LogManager, TopicPartition
from broker.protocol.records import parse_batches
from tests.broker.data_plane_helpers import bootstrap, broker

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat not installed (apt-get install kafkacat)")
N = 10_000
PARTITIONS = 3


def _kcat(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    assert KCAT is not None
    return subprocess.run([KCAT, *args], input=stdin, capture_output=True, timeout=60, check=False)


@pytest.mark.timeout(120)
def test_kcat_metadata_produce_snappy_zstd_lz4_consume(tmp_path: Path) -> None:
    with broker(tmp_path, num__partitions=PARTITIONS) as server:
        bs = bootstrap(server)
        # produce (auto-creates the topic): keyed lines "key:value", snappy, partition chosen by kcat per line
        by_partition: dict[int, list[str]] = {}
        for q in range(PARTITIONS):
            lines = [f"k{i}:value-{i}-{'z' * (i % 50)}" for i in range(q, N, PARTITIONS)]
            by_partition[q] = lines
            codec = ("snappy", "zstd", "lz4")[q % 3]  # one codec per partition
            done = _kcat("-b", bs, "-P", "-t", "kc", "-p", str(q), "-K", ":", "-z", codec,
                         stdin=("\n".join(lines) + "\n").encode())
            assert done.returncode == 0, done.stderr.decode()[-2000:]
        meta = _kcat("-b", bs, "-L")
        assert meta.returncode == 0
        assert f'topic "kc" with {PARTITIONS} partitions' in meta.stdout.decode()
        assert "broker 1 at 127.0.0.1" in meta.stdout.decode()
        for q in range(PARTITIONS):
            out = _kcat("-b", bs, "-C", "-t", "kc", "-p", str(q), "-o", "beginning", "-e", "-q",
                        "-f", "%o %k:%s\\n")
            assert out.returncode == 0, out.stderr.decode()[-2000:]
            got = out.stdout.decode().splitlines()
            assert got == [f"{o} {line}" for o, line in enumerate(by_partition[q])]
        # the whole topic, all partitions (what check-clients does)
        every = _kcat("-b", bs, "-C", "-t", "kc", "-e", "-q")
        assert len(every.stdout.decode().splitlines()) == N
    # the batches are stored as the client compressed them
    lm = LogManager([tmp_path / "data"])
    lm.startup()
    try:
        for q in range(PARTITIONS):
            log = lm.get_log(TopicPartition("kc", q))
            assert log is not None
            batches = parse_batches(log.read(0, 1 << 20).records)
            codec = ("snappy", "zstd", "lz4")[q % 3]
            wanted = {"snappy": 2, "lz4": 3, "zstd": 4}[codec]
            # librdkafka sends a batch uncompressed when compressing does not shrink it (a first batch of one short
            # record, under load): every batch is the codec or none, and some are the codec.
            assert {b.compression for b in batches} <= {0, wanted}
            if codec == "zstd":
                assert any(b.compression == wanted for b in batches)
            # else: librdkafka <= 2.11 (Debian's kcat has 2.0.2) only uses gzip/snappy/lz4 when the broker advertises
            # Produce v0; this broker advertises what it implements (v3+, like Kafka 4.0), so that client sends
            # these batches uncompressed. Newer librdkafka (confluent-kafka 2.16) compresses them.
    finally:
        lm.shutdown()
