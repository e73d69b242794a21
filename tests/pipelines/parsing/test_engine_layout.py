"""The log engine's fast path for the Apache layout against the declared regex it stands for (no Spark)."""

from __future__ import annotations

import random
import re

import polars as pl

from pipelines.parsing import patterns as P
from pipelines.parsing.engine_logs import _apache_fast

_LAYOUT = re.compile(P.LAYOUT_APACHE + P.END, re.DOTALL)
# Pieces the layout is made of, and the characters that could confuse a cut: brackets, parentheses, spaces.
_TOKENS = ("[", "]", " ", "(", ")", "] ", " (", "()", "[]", "INFO", "x", "2024-01-01 00:00:00,000", "é", "\u00a0",
           "\r", "\t", "[Broker id=1] ", "(kafka.log)", "Leader", "=")
_LINES = 20_000  # enough for every short arrangement of the tokens to come up many times


def _expected(line: str) -> tuple[bool, str | None, str | None, str | None, str | None, str | None]:
    m = _LAYOUT.match(line)
    if m is None:
        return (False, None, None, None, None, None)
    g = m.groupdict()
    return (True, g["ts__a"], g["level__a"], *[g[k] or None for k in ("ident__a", "body__a", "logger__a")])


def _lines() -> list[str]:
    rnd = random.Random(13)
    out = []
    for _ in range(_LINES):
        out.append("".join(rnd.choice(_TOKENS) for _ in range(rnd.randint(0, 14))))
        head = f"[{rnd.choice(['2024-01-01 00:00:00,000', ']', 'x'])}] {rnd.choice(['INFO', 'info', 'WARN', ''])} "
        out.append(head + "".join(rnd.choice(_TOKENS) for _ in range(rnd.randint(0, 8))))
        tail = rnd.choice([" (kafka.log)", " ()", "(x)", " (a)b)", " (a(b)", " (é)", ")"])
        out.append("[ts] INFO " + "".join(rnd.choice(_TOKENS) for _ in range(rnd.randint(0, 8))) + tail)
    return out


def test_fast_path_is_the_declared_regex() -> None:
    lines = _lines()
    got = (
        _apache_fast(pl.DataFrame({"_first": lines}).lazy())
        .select("_fast", "_ts", "_level", "_ident", "_body", "_logger")
        .collect()
        .rows()
    )
    for line, row in zip(lines, got, strict=True):
        want = _expected(line)
        fast = tuple(row) if row[0] else (False, None, None, None, None, None)
        assert fast == want, line
    assert sum(r[0] for r in got) > _LINES // 4  # the arrangements that match are well represented
