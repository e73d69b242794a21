"""Size-prefixed framing: bytes in, complete frames out (no I/O).

Every Kafka request and response is an int32 big-endian size followed by that many bytes.  The decoder
checks the size as soon as the 4 prefix bytes are in (like Kafka's ``NetworkReceive``), so an oversized
or negative prefix is refused before any buffering — the caller closes the connection.

Buffering is a ``bytearray`` with a read offset that is compacted only when the consumed part is at least
half the buffer, keeping ``feed`` O(n) over a connection's lifetime even when fed one byte at a time.
"""

from __future__ import annotations

import struct

from .errors import FrameTooLarge

__all__ = ["DEFAULT_MAX_FRAME_SIZE", "FrameDecoder", "frame"]

#: Kafka's ``socket.request.max.bytes`` default (100 MiB): the largest request a broker accepts.
DEFAULT_MAX_FRAME_SIZE = 104_857_600

_SIZE = struct.Struct(">i")


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` with its int32 size."""
    return _SIZE.pack(len(payload)) + payload


class FrameDecoder:
    """Incremental splitter of a byte stream into size-prefixed frames."""

    __slots__ = ("_buf", "_max", "_need", "_pos")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        """Args:
        max_frame_size: largest accepted frame (without the 4-byte prefix), e.g. socket.request.max.bytes.
        """
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        self._max = max_frame_size
        self._buf = bytearray()
        self._pos = 0
        self._need = -1  # size of the frame being assembled, -1 while the prefix is incomplete

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned in a frame (a size prefix already read is not counted)."""
        return len(self._buf) - self._pos

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return every frame completed by it (payload only, without the size prefix).

        Raises:
            FrameTooLarge: a size prefix is negative or larger than ``max_frame_size``.  The decoder is
                then unusable (the stream cannot be resynchronised); close the connection.
        """
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        pos = self._pos
        end = len(buf)
        while True:
            if self._need < 0:
                if end - pos < 4:
                    break
                size = _SIZE.unpack_from(buf, pos)[0]
                if size < 0 or size > self._max:
                    self._pos = pos
                    raise FrameTooLarge(size, self._max)
                pos += 4
                self._need = size
            if end - pos < self._need:
                break
            frames.append(bytes(buf[pos : pos + self._need]))
            pos += self._need
            self._need = -1
        if pos and pos >= len(buf) // 2:
            del buf[:pos]
            pos = 0
        self._pos = pos
        return frames
