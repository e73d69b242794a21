"""Property tests of the one record splitter (jobs.sources.file_tail): no byte lost or duplicated, however a buffer is
made and however a file is cut into pieces."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.sources.file_tail import Piece, buffer_records, read_piece
from tests.fuzz.budget import examples

pytestmark = pytest.mark.fuzz

# Lines that stress the splitter: log4j heads, continuation lines of every kind (stack frames, causes, a Java
# exception line, CRI/docker prefixed ones), blank and whitespace-only lines, carriage returns, bytes that are not
# UTF-8, and plain junk.
_LINES = st.one_of(
    st.sampled_from([
        b"[2021-03-02 08:00:01,010] INFO [Broker id=2] Handling LeaderAndIsr request (state.change.logger)",
        b"\tat kafka.server.ReplicaManager.becomeLeaderOrFollower(ReplicaManager.scala:1)",
        b"Caused by: java.io.IOException: boom",
        b"java.io.IOException: Connection to 3 was disconnected before the response was read",
        b"Suppressed: x",
        b"\t... 12 more",
        b"2024-05-10T09:12:44.101Z stdout F \tat kafka.Foo(x:1)",
        b"kafka-1  | Caused by: x",
        b"kafka_network_requestchannel_requestqueuesize 3.0 1614672000000",
        b"", b" ", b"\t", b"\r", b" \r", b"\xff\xfe", b"\xe2\x82", b"\x00",
        # where a vectorized matcher could differ from Python's bytes regex: a carriage return or a vertical tab where
        # a continuation's whitespace or end is expected
        b"x stdout F \r", b"x stdout F \r\r", b"kafka-1  | \r", b"java.io.IOException\r", b"java.io.IOException\r\r",
        b"\x0bat x", b"\x0c", b"\r\tat x",
    ]),
    st.binary(max_size=20).map(lambda b: b.replace(b"\n", b"")),
)
buffers = st.lists(_LINES, max_size=12).map(lambda lines: b"\n".join(lines)).flatmap(
    lambda body: st.sampled_from([body, body + b"\n", body + b"\r\n"]))
families = st.sampled_from(["logs", "metrics"])


def _expected_text(span: bytes) -> str:
    """A record's text from its bytes: lines without their trailing CR, blank lines left out, invalid UTF-8 replaced."""
    lines = [line[:-1] if line.endswith(b"\r") else line for line in span.split(b"\n") if line.strip()]
    return "\n".join(line.decode("utf-8", errors="replace") for line in lines)


@settings(max_examples=examples(400))
@given(buf=buffers, family=families, base=st.integers(0, 2**40))
def test_records_cover_every_byte_once(buf: bytes, family: str, base: int) -> None:
    texts, offsets, sizes = buffer_records(buf, base, family)
    assert len(texts) == len(offsets) == len(sizes)
    covered = 0  # bytes of buf before which everything is a record or not one
    for text, offset, size in zip(texts, offsets, sizes, strict=True):
        start, end = offset - base, offset - base + size
        gap = buf[covered:start]
        assert not gap.strip(), f"bytes between records lost: {gap!r}"  # only newlines and blank lines
        assert start == 0 or buf[start - 1:start] == b"\n"  # a record starts a line
        assert end == len(buf) or buf[end:end + 1] in (b"\n", b"\r"), f"record ends mid-line: {buf[start:end + 1]!r}"
        assert text == _expected_text(buf[start:end])
        covered = end
    assert not buf[covered:].strip(), f"bytes after the last record lost: {buf[covered:]!r}"


def _read_in_pieces(buf: bytes, family: str, bounds: list[int]) -> tuple[list[str], list[int]]:
    """The records of ``buf`` written to a file and read as the pieces [bounds[i], bounds[i + 1]) of one range."""
    texts: list[str] = []
    offsets: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "state-change.log")
        with open(path, "wb") as fh:
            fh.write(buf)
        st_ = os.stat(path)
        for a, b in itertools.pairwise(bounds):
            piece = Piece(path, st_.st_dev, st_.st_ino, 0, len(buf), a, b, family, "k", "c", 1)
            for batch in read_piece(piece, now=dt.datetime(2024, 1, 1, tzinfo=dt.UTC)):
                texts += batch.column("line").to_pylist()
                offsets += batch.column("source_offset").to_pylist()
    return texts, offsets


@settings(max_examples=examples(200), deadline=None)  # writes a file per example
@given(buf=buffers, family=families, data=st.data())
def test_pieces_of_a_file_yield_the_records_of_the_whole(buf: bytes, family: str, data: st.DataObject) -> None:
    whole = buffer_records(buf, 0, family)
    cuts = data.draw(st.lists(st.integers(1, max(1, len(buf) - 1)), max_size=4)) if len(buf) > 1 else []
    assert _read_in_pieces(buf, family, [0, *sorted(set(cuts)), len(buf)]) == (whole[0], whole[1])


# Regressions found by the properties above.
def test_a_metric_line_across_a_piece_end_is_read_whole() -> None:
    # A piece of a metrics file read nothing past its end: the line across it became a cut record ("..._total 12"
    # for "..._total 12345") and the next piece skipped the rest (one line per 8 MiB of a big scrape).
    buf = b"a_total 1\nb_total 12345\nc_total 3\n"
    assert _read_in_pieces(buf, "metrics", [0, 14, len(buf)])[0] == ["a_total 1", "b_total 12345", "c_total 3"]


def test_a_leading_continuation_line_after_blank_lines_is_read_once() -> None:
    # The first piece stopped at its end with no record yet, the next skipped the line as another piece's.
    buf = b"\n\tat kafka.Foo(x:1)\n[2021-03-02 08:00:01,010] INFO x (y)\n"
    assert _read_in_pieces(buf, "logs", [0, 1, len(buf)]) == buffer_records(buf, 0, "logs")[:2]


def test_a_record_size_counts_the_blank_lines_inside_it() -> None:
    buf = b"[2021-03-02 08:00:01,010] ERROR x (y)\n\n\tat kafka.Foo(x:1)\nnext\n"
    texts, offsets, sizes = buffer_records(buf, 100, "logs")
    assert texts[0] == "[2021-03-02 08:00:01,010] ERROR x (y)\n\tat kafka.Foo(x:1)"
    assert (offsets[0], sizes[0]) == (100, buf.index(b"\nnext"))
