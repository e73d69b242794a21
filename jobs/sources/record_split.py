"""The one record splitter: a buffer of whole lines -> records, vectorized (numpy + pyarrow, no Python per line).

Rules (the file source's, also used for a scraped Prometheus answer and by `planewatch parse`):

* A line is the bytes before a ``\\n``; one trailing ``\\r`` is not part of its text (it is of its size).
* Blank lines (ASCII whitespace only) are not records; a record's size counts the blank lines inside it.
* Logs only: a continuation line (:data:`CONTINUATION`: stack frames, causes, an exception line under an ERROR line,
  optionally behind a container runtime's prefix) joins the record before it with a ``\\n``. A piece that is not the
  first of its range skips its leading continuation lines (the previous piece's record took them); the first piece
  keeps a leading one as a record of its own, and the lines continuing it.
* A record starts on a line inside the piece (``line start < piece end``); continuation lines join it past the end.
* Text that is not UTF-8 is decoded with U+FFFD replacements.

Cost: a few passes of C over the buffer (newline search, an anchored RE2 match per line, one gather), about 0.3 us
per line against ~2 us for a Python loop over the lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["CONTINUATION", "Records", "split_records"]

_WS = rb"[ \t\n\r\x0b\x0c]"  # Python's bytes.isspace() set, spelt out: RE2's \s lacks \x0b
_NON_WS = rb"[^ \t\n\r\x0b\x0c]"
# A continuation line, matched at the start of a line's value, which holds its final \n and the \r before it: a
# leading whitespace byte other than those two, and the end anchor after them.
# Apache Kafka 3.9's controller and state-change logs put a Java exception line under an ERROR/WARN line ("java.io.
# IOException: Connection to 3 was disconnected before the response was read") before its frames; a container
# runtime (CRI) or docker compose may prefix every line, continuation lines included.
CONTINUATION = (
    rb"^(?:" + _NON_WS + rb"+ (?:stdout|stderr) [FP] |[\w.-]+" + _WS + rb"+\| )?"
    rb"(?:[ \t\x0b\x0c]|\r[^\n]|at |Caused by:|Suppressed:|\.\.\. \d+ more"
    rb"|(?:[a-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable)(?::|\r?\n?$))"
)
_WHITESPACE_BYTES = b" \t\n\r\x0b\x0c"


@dataclass(frozen=True)
class Records:
    """Records of a buffer: their texts, and each one's file offset and size in bytes (blank lines inside it and a
    trailing \\r included, its final \\n not)."""

    texts: pa.StringArray
    offsets: np.ndarray  # int64
    sizes: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.texts)


def split_records(buf: bytes, base: int, *, join: bool, end: int | None = None, skip_leading: bool = False
                  ) -> Records:
    """Split ``buf`` (whole lines from file offset ``base``, a line start; the last line may lack its ``\\n``).

    ``join``: continuation lines join the record before them (logs). ``end``: records start before this file offset
    (None: anywhere in the buffer). ``skip_leading``: leading continuation lines belong to an earlier piece's record.
    """
    # lazy: +0.2 s, +47 MB in every planewatch CLI process (note at the imports)

    if buf and not buf.endswith(b"\n"):
        buf += b"\n"
    data = np.frombuffer(buf, dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    starts = np.empty(len(newlines), dtype=np.int64)
    if len(newlines):
        starts[0] = 0
        starts[1:] = newlines[:-1] + 1
    # every line as one value holding its \n (contiguous offsets over the buffer: no copy)
    bounds = np.empty(len(newlines) + 1, dtype=np.int64)
    bounds[:-1] = starts
    bounds[-1] = len(buf)
    py_buf = pa.py_buffer(buf)
    lines = pa.LargeBinaryArray.from_buffers(pa.large_binary(), len(newlines), [None, pa.py_buffer(bounds), py_buf])
    ends = newlines  # each line's raw end (its \r included)
    keep = ~_blank(data, starts, ends, buf)
    cont = np.zeros(len(starts), dtype=bool)
    if join and len(starts):
        cont = pc.match_substring_regex(lines, CONTINUATION.decode("latin-1")).to_numpy(zero_copy_only=False) & keep
    if end is not None:
        # the first record-starting line at or past the piece's end stops the split (its record is the next piece's)
        past = np.flatnonzero(keep & ~cont & (starts + base >= end))
        if len(past):
            keep[past[0]:] = False
    kept = np.flatnonzero(keep)
    head = ~cont[kept]
    if len(kept) and not head[0]:
        # leading continuation lines: an earlier piece's record, or (first piece) a record of their own
        if skip_leading:
            first = np.flatnonzero(head)
            kept = kept[first[0]:] if len(first) else kept[:0]
            head = head[first[0]:] if len(first) else head[:0]
        else:
            head[0] = True
    first_line = np.flatnonzero(head)
    last_line = np.empty(len(first_line), dtype=np.int64)
    if len(first_line):
        last_line[:-1] = first_line[1:] - 1
        last_line[-1] = len(kept) - 1
    offsets = starts[kept[first_line]] + base
    sizes = ends[kept[last_line]] + base - offsets
    taken = lines.take(pa.array(kept, pa.int64()))
    # strip the \n, then one \r
    text = pc.binary_slice(taken, 0, -1)
    if b"\r" in buf:
        text = pc.replace_substring_regex(text, "\r$", "", max_replacements=1)
    if len(first_line) != len(kept):
        records = pa.LargeListArray.from_arrays(pa.array(np.append(first_line, len(kept))), text)
        text = pc.binary_join(records, pa.scalar(b"\n", pa.large_binary()))
    return Records(_decode(text), offsets.astype(np.int64), sizes.astype(np.int64))


def _blank(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, buf: bytes) -> np.ndarray:
    """Whether each line holds only ASCII whitespace. A line whose first byte is not whitespace is not blank (most
    lines); the others are checked one by one (blank lines and indented continuation lines, few)."""

    blank = np.zeros(len(starts), dtype=bool)
    if not len(starts):
        return blank
    first = data[np.minimum(starts, len(data) - 1)]
    empty = starts >= ends
    maybe = empty | np.isin(first, np.frombuffer(_WHITESPACE_BYTES, dtype=np.uint8))
    for i in np.flatnonzero(maybe):
        blank[i] = not buf[starts[i]:ends[i]].strip()
    return blank


def _decode(text: pa.Array) -> pa.StringArray:
    """UTF-8 text as a string array; bytes that are not UTF-8 become U+FFFD, as Python's ``errors="replace"``."""

    try:
        return text.cast(pa.large_string()).cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([b.decode("utf-8", errors="replace") for b in text.to_pylist()], pa.string())
