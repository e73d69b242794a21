"""Transactions are out of scope: a transactional client is refused at once, with an answer Kafka gives.

This broker runs no transaction coordinator (no ``__transaction_state``, no AddPartitionsToTxn/EndTxn). Answering
FindCoordinator for a transactional id with COORDINATOR_NOT_AVAILABLE, as a Kafka whose coordinator is loading
does, would make every client retry until its ``transaction.timeout.ms``/``max.block.ms`` (60 s) runs out. Instead
the transactional id is refused as Kafka refuses one its authorizer denies: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
(53, "Transactional Id authorization failed.") on FindCoordinator with key type TRANSACTION and on InitProducerId
with a transactional id. Every client treats that error as fatal, so ``init_transactions()`` fails in milliseconds
with Kafka's error. Idempotent producers (InitProducerId without a transactional id) are unaffected.
"""

from __future__ import annotations

from typing import Any

from broker.apis.kafka_apis import Handler, HandlerResult
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode

__all__ = ["KEY_TYPE_TRANSACTION", "refuse_transactional_coordinator", "refuse_transactional_init"]

KEY_TYPE_TRANSACTION = 1  # FindCoordinator's CoordinatorType.TRANSACTION
REFUSED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
MESSAGE = "Transactional Id authorization failed."  # Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED's message


def refuse_transactional_coordinator(base: Handler) -> Handler:
    """Wrap FindCoordinator: transaction coordinator lookups are refused, group lookups go to ``base``."""

    def handler(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        if int(body.get("key_type", 0)) != KEY_TYPE_TRANSACTION:
            return base(request, header, body)
        refused = {"error_code": REFUSED, "error_message": MESSAGE, "node_id": -1, "host": "", "port": -1}
        if header.api_version >= 4:
            keys = list(body.get("coordinator_keys") or [])
            return HandlerResult({"throttle_time_ms": 0, "coordinators": [{"key": k, **refused} for k in keys]},
                                 (REFUSED,) * len(keys) or (ErrorCode.NONE,))
        return HandlerResult({"throttle_time_ms": 0, **refused}, (REFUSED,))

    return handler


def refuse_transactional_init(base: Handler) -> Handler:
    """Wrap InitProducerId: a transactional id is refused, an idempotent producer goes to ``base``."""

    def handler(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        if body.get("transactional_id") is None:
            return base(request, header, body)
        return HandlerResult({"throttle_time_ms": 0, "error_code": REFUSED, "producer_id": -1, "producer_epoch": -1},
                             (REFUSED,))

    return handler
