"""The declared regexes (:mod:`pipelines.parsing.patterns`, :mod:`pipelines.parsing.metric_spec`) in the dialect of
Rust's ``regex`` crate, which polars runs.

The declarations are written in Python ``re`` syntax with ASCII classes and "the whole text must match" semantics.
Rust's crate has no look-around and no back-references, and its ``\\s``/``\\S`` and ``.`` differ, so a regex is
translated once, token by token:

* ``\\s`` / ``\\S`` become explicit ASCII classes (Rust's are Unicode: U+00A0 would be a space there);
* the pattern runs with ``(?s)`` (``.`` matches a newline, as Python's DOTALL) and ends with ``\\z``, the absolute
  end of the text (:data:`pipelines.parsing.patterns.END`, a negative look-ahead, and an unescaped ``$`` both mean
  it here);
* any remaining look-around or back-reference is an error (:class:`RegexDialectError`), found when the engine first
  compiles its stages, so a new pattern that needs one fails loudly in the tests rather than silently in a batch.

Rust's ``regex`` reports leftmost-first matches with the captures a backtracking engine reports, so a translated
pattern captures what the Python form captures.
"""

from __future__ import annotations

from functools import cache

from pipelines.parsing.patterns import END

__all__ = ["RegexDialectError", "to_rust"]

_SPACE = r"\t\n\x0B\x0C\r "  # Python's ASCII \s
_FORBIDDEN = ("(?=", "(?!", "(?<=", "(?<!")


class RegexDialectError(ValueError):
    """A declared regex uses a construct Rust's regex crate does not have (look-around, back-reference)."""


@cache
def to_rust(regex: str, anchor_end: bool = True) -> str:
    """`regex` (Python syntax, ASCII) -> Rust syntax with DOTALL; `anchor_end`: append ``\\z`` (full match)."""
    text = regex[: -len(END)] if regex.endswith(END) else regex
    out: list[str] = []
    in_class = False
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            pair = text[i : i + 2]
            if pair == r"\s" and text[i : i + 4] == r"\s\S" and in_class:
                out.append(r"\x00-\x{10FFFF}")  # [\s\S]: any character
                i += 4
                continue
            if nxt == "s":
                out.append(_SPACE if in_class else f"[{_SPACE}]")
            elif nxt == "S":
                if in_class:
                    raise RegexDialectError(f"\\S inside a class is not translated: {regex!r}")
                out.append(f"[^{_SPACE}]")
            elif nxt.isdigit() and nxt != "0":
                raise RegexDialectError(f"back-reference \\{nxt} in {regex!r}")
            else:
                out.append(pair)
            i += 2
            continue
        if in_class:
            if ch == "]":
                in_class = False
            out.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class = True
            out.append(ch)
            # a `]` or `^]` right after the opening bracket is a literal
            j = i + 1
            if j < n and text[j] == "^":
                out.append("^")
                j += 1
            if j < n and text[j] == "]":
                out.append(r"\]")
                j += 1
            i = j
            continue
        if text.startswith(_FORBIDDEN, i) or text.startswith("(?P=", i):
            raise RegexDialectError(f"look-around or back-reference at {i} in {regex!r}")
        out.append(r"\z" if ch == "$" else ch)
        i += 1
    return "(?s)" + "".join(out) + (r"\z" if anchor_end else "")
