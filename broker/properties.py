"""Java ``.properties`` syntax (``java.util.Properties.load``), as Kafka reads ``server.properties``.

Rules implemented (Properties.load(Reader) javadoc):

* a *natural* line ends at ``\\n``, ``\\r`` or ``\\r\\n``; a *logical* line continues on the next natural line when it
  ends with an odd number of backslashes, and the continuation line's leading whitespace is dropped;
* blank lines and lines whose first non-blank character is ``#`` or ``!`` are comments;
* the key ends at the first unescaped ``=``, ``:`` or whitespace; whitespace, then at most one ``=``/``:``, then
  whitespace separate it from the value (so ``a=b``, ``a: b`` and ``a b`` all mean a -> b);
* escapes ``\\t \\n \\r \\f \\uXXXX``; a backslash before any other character yields that character.

Pure functions, no I/O beyond :func:`load_properties_file`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PropertiesSyntaxError", "load_properties_file", "parse_properties"]

_WHITESPACE = " \t\f"
_SEPARATORS = "=:"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class PropertiesSyntaxError(ValueError):
    """A malformed line (only a bad ``\\uXXXX`` escape is an error in Java's grammar)."""


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continuation lines; returns (first natural line number, logical line) pairs, comments removed."""
    out: list[tuple[int, str]] = []
    natural = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    buf: str | None = None
    start = 0
    for number, raw in enumerate(natural, start=1):
        line = raw.lstrip(_WHITESPACE)
        if buf is None:
            if not line or line[0] in "#!":
                continue
            start = number
            buf = ""
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            buf += line[:-1]
            continue
        buf += line
        out.append((start, buf))
        buf = None
    if buf is not None:
        out.append((start, buf))
    return out


def _unescape(text: str, line_no: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            hex_digits = text[i + 2 : i + 6]
            if len(hex_digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in hex_digits):
                raise PropertiesSyntaxError(f"line {line_no}: malformed \\uxxxx encoding")
            out.append(chr(int(hex_digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in _SEPARATORS or ch in _WHITESPACE:
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(_WHITESPACE)
    if rest[:1] in tuple(_SEPARATORS):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def parse_properties(text: str) -> dict[str, str]:
    """Parse properties text into an ordered dict (a later duplicate key wins, as in Java)."""
    result: dict[str, str] = {}
    for line_no, line in _logical_lines(text):
        raw_key, raw_value = _split_key_value(line)
        result[_unescape(raw_key, line_no)] = _unescape(raw_value, line_no)
    return result


def load_properties_file(path: str | Path) -> dict[str, str]:
    """Read and parse a properties file (ISO-8859-1 per Java; UTF-8 accepted since Java 9 readers use it)."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text)
