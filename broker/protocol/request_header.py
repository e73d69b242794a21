"""The decoded request header, a plain value: the wire format is :mod:`.headers`, the errors that carry one
:mod:`.errors`."""

from __future__ import annotations

from dataclasses import dataclass

from .api_keys import ApiKey

__all__ = ["RequestHeader"]


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """The decoded request header; ``str()`` is Kafka's ``RequestHeader.toString``."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None

    def __str__(self) -> str:
        try:
            api = ApiKey(self.api_key).name
        except ValueError:
            api = str(self.api_key)
        return (
            f"RequestHeader(apiKey={api}, apiVersion={self.api_version}, "
            f"clientId={self.client_id}, correlationId={self.correlation_id})"
        )
