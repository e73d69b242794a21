"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31) on a broker without an authorizer.

No ``authorizer.class.name`` is configured on this broker (it has none to configure), so it answers these APIs
exactly as Kafka's ``AclApis`` does when ``authorizer`` is ``None``: SECURITY_DISABLED, with Kafka's messages
(DescribeAcls at the top level, "No Authorizer is configured on the broker"; CreateAcls and DeleteAcls once per
creation or filter, from ``getErrorResponse(SecurityDisabledException("No Authorizer is configured."))``).
Admin clients report that error; nothing is stored.
"""

from __future__ import annotations

from typing import Any

from broker.apis.kafka_apis import HandlerResult
from broker.network.request import Request
from broker.protocol import RequestHeader
from broker.protocol.error_codes import ErrorCode

__all__ = ["handle_create_acls", "handle_delete_acls", "handle_describe_acls"]

#: Kafka's texts (``AclApis``) for the two shapes of answer.
DESCRIBE_MESSAGE = "No Authorizer is configured on the broker"
NO_AUTHORIZER = "No Authorizer is configured."


def handle_describe_acls(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
    """SECURITY_DISABLED at the top level, no resources."""
    del request, header, body
    return HandlerResult({"throttle_time_ms": 0, "error_code": ErrorCode.SECURITY_DISABLED,
                          "error_message": DESCRIBE_MESSAGE, "resources": []}, (ErrorCode.SECURITY_DISABLED,))


def handle_create_acls(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
    """SECURITY_DISABLED for every creation asked for."""
    del request, header
    n = len(body.get("creations") or [])
    results = [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER} for _ in range(n)]
    codes = (ErrorCode.SECURITY_DISABLED,) * n or (ErrorCode.NONE,)
    return HandlerResult({"throttle_time_ms": 0, "results": results}, codes)


def handle_delete_acls(request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
    """SECURITY_DISABLED for every filter asked for, no matching ACLs."""
    del request, header
    n = len(body.get("filters") or [])
    results = [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": NO_AUTHORIZER, "matching_acls": []}
               for _ in range(n)]
    codes = (ErrorCode.SECURITY_DISABLED,) * n or (ErrorCode.NONE,)
    return HandlerResult({"throttle_time_ms": 0, "filter_results": results}, codes)
