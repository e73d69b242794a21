"""One client sends the largest Metadata request the frame limit allows, naming one topic over and over; another
client on the same network thread is timed meanwhile, and the broker's memory is watched before, during and after.

Before the broker collapsed repeated names and bounded its request log, 2,000,000 repetitions (a 6 MB request)
took it 32 s and 2.3 GB it kept afterwards, and the other client waited up to 2.9 s for one answer.
"""

from __future__ import annotations

import struct
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from broker.protocol import ApiKey, decode_response
from broker.protocol.error_codes import ErrorCode
from broker.protocol.varint import write_uvarint
from tests.polling import wait_until

from .data_plane_helpers import BrokerProcess, Wire, free_port

# The frame limit of the test's broker: 32 MiB holds ~11 million names and keeps the broker's work to a few seconds
# (the work is linear in the frame: at the 100 MiB default, 35 million names, it took 11 s and peaked at 401 MB).
FRAME_LIMIT = 32 * 1024 * 1024
# One name's encoding in a Metadata v9 request: compact string "t" (2 bytes) and an empty tagged-field section.
NAME_ENTRY = b"\x02t\x00"
# What another client may wait for one answer while the big request is handled.
WORST_LATENCY_S = 1.0
# The big request must be answered within this (it is not the point of the test; the other client is).
ANSWER_DEADLINE_S = 120.0
# Peak RSS growth allowed: the frame itself (received, then handed to the handler), the list of ~11M slots of the
# decoded array (8 bytes each), and slack for the interpreter. The old broker grew by gigabytes.
PEAK_GROWTH_MAX = 6 * FRAME_LIMIT
# Memory given back after the answer: within this of the RSS before the request.
AFTER_GROWTH_MAX = 64 * 1024 * 1024
# The test kills a broker whose RSS passes this (an old broker would take the machine's memory).
RSS_ABORT = 3 * 1024**3
PARTITIONS = 20


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _metadata_frame(names: int, correlation_id: int) -> bytes:
    """A Metadata v9 request naming topic ``t`` ``names`` times, encoded by hand (the codec would build a list of
    millions of dicts in the test process first)."""
    client = b"amplifier"
    header = struct.pack(">hhih", ApiKey.METADATA, 9, correlation_id, len(client)) + client + b"\x00"
    body = write_uvarint(names + 1) + NAME_ENTRY * names + b"\x00\x00\x00\x00"  # three flags false, no tags
    return struct.pack(">i", len(header) + len(body)) + header + body


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_request_naming_one_topic_millions_of_times_does_not_hold_up_other_clients(tmp_path: Path) -> None:
    port = free_port()
    proc = BrokerProcess(tmp_path, port, extra=f"num.network.threads=1\nsocket.request.max.bytes={FRAME_LIMIT}\n")
    proc.start()
    try:
        assert proc.proc is not None
        pid = proc.proc.pid
        other, big = Wire(port), Wire(port)
        created = other.call(ApiKey.CREATE_TOPICS, 5, {"topics": [
            {"name": "t", "num_partitions": PARTITIONS, "replication_factor": 1}], "timeout_ms": 5000})
        assert created["topics"][0]["error_code"] == ErrorCode.NONE
        probe = {"topics": [{"name": "t"}], "allow_auto_topic_creation": False}
        assert len(other.call(ApiKey.METADATA, 9, probe)["topics"][0]["partitions"]) == PARTITIONS
        before = _rss(pid)
        names = (FRAME_LIMIT - 64) // len(NAME_ENTRY)
        frame = _metadata_frame(names, 7)
        assert len(frame) - 4 <= FRAME_LIMIT
        big.sock.settimeout(ANSWER_DEADLINE_S)

        def amplify() -> bytes:
            big.send_raw(frame)
            return big.read_frame()

        latencies: list[float] = []
        peak = before
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(amplify)
            deadline = time.monotonic() + ANSWER_DEADLINE_S
            while not answer.done() and time.monotonic() < deadline:
                for api, version, body in ((ApiKey.API_VERSIONS, 0, {}), (ApiKey.METADATA, 9, probe)):
                    started = time.monotonic()
                    other.call(api, version, body)
                    latencies.append(time.monotonic() - started)
                peak = max(peak, _rss(pid))
                if peak > RSS_ABORT:
                    proc.kill()
                    pytest.fail(f"the broker grew to {peak >> 20} MB")
            correlation, response = decode_response(ApiKey.METADATA, 9, answer.result(timeout=5))
        assert correlation == 7
        assert [(t["name"], len(t["partitions"])) for t in response["topics"]] == [("t", PARTITIONS)]
        assert len(latencies) >= 10, "the other client's requests did not overlap the big one"
        worst = max(latencies)
        print(f"\n{names} names in {len(frame) >> 20} MiB: other client's worst {worst * 1000:.0f} ms over "
              f"{len(latencies)} requests; broker RSS before {before >> 20} MB, peak {peak >> 20} MB")
        after = wait_until(lambda: (rss := _rss(pid)) - before < AFTER_GROWTH_MAX and rss, 10,
                           lambda: f"the broker's RSS back within {AFTER_GROWTH_MAX >> 20} MB of {before >> 20} MB "
                                   f"(now {_rss(pid) >> 20} MB)", interval=0.1)
        print(f"broker RSS after {after >> 20} MB")
        assert worst < WORST_LATENCY_S
        assert peak - before < PEAK_GROWTH_MAX
        assert after - before < AFTER_GROWTH_MAX
        assert other.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == ErrorCode.NONE
        other.close()
        big.close()
    finally:
        proc.kill()
