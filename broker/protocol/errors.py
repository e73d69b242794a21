"""The protocol package's exception hierarchy (one base, translated once at the receive boundary).

Each subclass carries the Kafka error code (:class:`~broker.protocol.error_codes.ErrorCode`) a broker
would answer with, where one applies, so the network layer never has to guess.
"""

from __future__ import annotations

from .error_codes import ErrorCode
from .request_header import RequestHeader

__all__ = [
    "CorruptRecord",
    "CorruptRequest",
    "EncodeError",
    "FrameTooLarge",
    "ProtocolError",
    "UnknownApi",
    "UnsupportedVersion",
]


class ProtocolError(Exception):
    """Base of every error raised by :mod:`broker.protocol`."""

    error_code: int = int(ErrorCode.UNKNOWN_SERVER_ERROR)


class FrameTooLarge(ProtocolError):
    """A size prefix above ``max_frame_size`` (or negative): Kafka closes the connection (InvalidReceiveException)."""

    error_code: int = int(ErrorCode.INVALID_REQUEST)

    def __init__(self, size: int, max_frame_size: int) -> None:
        self.size = size
        self.max_frame_size = max_frame_size
        if size < 0:
            text = f"Invalid receive (size = {size})"
        else:
            text = f"Invalid receive (size = {size} larger than {max_frame_size})"
        super().__init__(text)


class CorruptRequest(ProtocolError):
    """A truncated or garbled request header or body."""

    def __init__(self, message: str, error_code: int = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message)
        self.error_code = error_code


class UnknownApi(ProtocolError):
    """The api_key is not one this codec implements (Kafka closes the connection)."""

    error_code: int = int(ErrorCode.INVALID_REQUEST)

    def __init__(self, header: RequestHeader) -> None:
        super().__init__(f"Unknown API key {header.api_key}")
        self.header = header


class UnsupportedVersion(ProtocolError):
    """The api_version is outside :data:`~broker.protocol.SUPPORTED` for that api_key."""

    error_code: int = int(ErrorCode.UNSUPPORTED_VERSION)

    def __init__(self, header: RequestHeader, supported: tuple[int, int]) -> None:
        super().__init__(
            f"Unsupported version {header.api_version} of API key {header.api_key} "
            f"(supported {supported[0]}-{supported[1]})"
        )
        self.header = header
        self.supported = supported


class EncodeError(ProtocolError):
    """A body dict that cannot be encoded (wrong type, None in a non-nullable field, out-of-range int)."""


class CorruptRecord(ProtocolError):
    """A record batch that fails length/magic/CRC validation."""

    error_code: int = int(ErrorCode.CORRUPT_MESSAGE)

    def __init__(self, message: str, error_code: int = ErrorCode.CORRUPT_MESSAGE) -> None:
        super().__init__(message)
        self.error_code = error_code
