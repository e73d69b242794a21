"""What a request handler is: a function of the request, its header and decoded body returning a
:class:`HandlerResult` (:class:`broker.apis.kafka_apis.KafkaApis` dispatches to them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from broker.network.request import Request
from broker.protocol import RequestHeader

__all__ = ["Handler", "HandlerResult"]


@dataclass(frozen=True, slots=True)
class HandlerResult:
    """A handler's answer: the response body and every error code in it (Kafka's ``errorCounts``, with repeats)."""

    body: dict[str, Any]
    error_codes: tuple[int, ...]
    metric_name: str | None = None  # RequestMetrics' request tag when not the API name ("FetchConsumer", ...)
    no_response: bool = False  # acks=0 Produce: send nothing (close the connection when ``close``)
    close: bool = False


Handler = Callable[[Request, RequestHeader, dict[str, Any]], HandlerResult]
