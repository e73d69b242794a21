"""Turns the declared regexes into the two engines' forms: Java (for Spark) and Python ``re`` (pure, no Spark).

One regex evaluation fills many columns: each regex is applied with ``regexp_replace`` and a replacement template
``MARK slot SEP slot SEP ...`` whose slots reference the groups (``$3``) or hold constants; the result is ``split`` on
``SEP`` once. A line the regex does not match comes back unchanged (no ``MARK`` in front), so "matched" is a prefix
test. The Python engine builds the very same string from ``re.Match`` objects, so both engines share every later step,
including the odd cases (a captured text that itself contains ``SEP`` makes the slot count wrong: both engines treat
the line as not matched).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache

from pipelines.parsing.patterns import END

__all__ = ["MARK", "SEP", "Compiled", "SlotLayout", "compile_regex", "java_regex", "python_regex"]

MARK = "\x02"  # first char of a matched template; a classifier literal never starts with it
SEP = "\x01"  # slot separator; split() takes Java's single-char fast path for it
_NAMED = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")
_FLAGS = re.ASCII | re.DOTALL


def java_regex(regex: str) -> str:
    """The Java form: DOTALL, group names stripped (group numbers are unchanged), absolute end anchor."""
    return "(?s)" + _NAMED.sub("(", regex) + END


@cache
def python_regex(regex: str) -> re.Pattern[str]:
    """The Python form: ASCII classes (like Java's), DOTALL, absolute end anchor."""
    return re.compile(regex + END, _FLAGS)


def field_of(group: str) -> str:
    """`topic__s` -> `topic`: several groups may feed one column."""
    return group.split("__", 1)[0]


@dataclass(frozen=True)
class SlotLayout:
    """The slots shared by every regex of a stage: (column, k) for the k-th group feeding that column."""

    slots: tuple[tuple[str, int], ...]
    positions: dict[str, tuple[int, ...]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        pos: dict[str, list[int]] = {}
        for i, (c, _) in enumerate(self.slots):
            pos.setdefault(c, []).append(i)
        object.__setattr__(self, "positions", {c: tuple(v) for c, v in pos.items()})

    def index(self, column: str) -> tuple[int, ...]:
        """Slot positions (in order) feeding `column`."""
        return self.positions.get(column, ())


@dataclass(frozen=True)
class Compiled:
    """One regex of a stage: its Java form and replacement template, and what the Python engine needs."""

    java: str
    template: str
    python: re.Pattern[str]
    # For each slot: the group numbers to concatenate, or a constant.
    slot_groups: tuple[tuple[int, ...], ...]
    slot_consts: tuple[str, ...]

    def expand(self, text: str) -> str:
        """What Spark's regexp_replace(text, java, template) returns, computed with Python `re`."""
        m = self.python.match(text)
        if m is None:
            return text
        parts = []
        for groups, const in zip(self.slot_groups, self.slot_consts, strict=True):
            parts.append("".join(m.group(g) or "" for g in groups) if groups else const)
        return MARK + SEP.join(parts)


def layout_for(regexes: Sequence[str], columns: Sequence[str], concat: bool) -> SlotLayout:
    """The slot layout for a stage. `concat`: groups of one column share one slot (exclusive alternatives)."""
    need = dict.fromkeys(columns, 1)
    if not concat:
        for rx in regexes:
            counts: dict[str, int] = {}
            for name in python_regex(rx).groupindex:
                col = field_of(name)
                counts[col] = counts.get(col, 0) + 1
            for col, n in counts.items():
                if col not in need:
                    raise ValueError(f"group {col!r} of {rx!r} is not a column of this stage")
                need[col] = max(need[col], n)
    return SlotLayout(tuple((c, k) for c in columns for k in range(need[c])))


def _java_const(text: str) -> str:
    return text.replace("\\", "\\\\").replace("$", "\\$")


def compile_regex(regex: str, layout: SlotLayout, consts: Mapping[str, str] | None = None,
                  concat: bool = False) -> Compiled:
    """Compile one regex of a stage against the stage's slot layout."""
    consts = consts or {}
    py = python_regex(regex)
    by_col: dict[str, list[int]] = {}
    for name, number in sorted(py.groupindex.items(), key=lambda kv: kv[1]):
        by_col.setdefault(field_of(name), []).append(number)
    for col in list(by_col) + list(consts):
        if not layout.index(col):
            raise ValueError(f"{col!r} of {regex!r} has no slot")
    slot_groups: list[tuple[int, ...]] = []
    slot_consts: list[str] = []
    for col, k in layout.slots:
        groups = by_col.get(col, [])
        if concat:
            slot_groups.append(tuple(groups))
            slot_consts.append("" if groups else consts.get(col, ""))
        elif k < len(groups):
            slot_groups.append((groups[k],))
            slot_consts.append("")
        else:
            slot_groups.append(())
            slot_consts.append(consts.get(col, "") if k == len(groups) else "")
    java_slots = [
        "".join(f"${g}" for g in groups) if groups else _java_const(const)
        for groups, const in zip(slot_groups, slot_consts, strict=True)
    ]
    return Compiled(java_regex(regex), MARK + SEP.join(java_slots), py, tuple(slot_groups), tuple(slot_consts))
