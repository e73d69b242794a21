"""KafkaApis: one request in, one response out (implements ``broker.network.request.RequestHandlerApi``).

Dispatch is a table ``api_key -> handler``; the data-plane issues add their handlers with :meth:`KafkaApis.register`.
ApiVersions advertises exactly the APIs that have a handler, in the version ranges the codec implements
(``broker.protocol.SUPPORTED``), so a client never sees an API it cannot use.

Bad input, as Kafka 2.8 treats it:

* unknown api key, a garbled header/body, or an unsupported version of any API but ApiVersions: the request cannot
  be parsed (Kafka's ``InvalidRequestException`` in ``RequestContext.parseRequest``) -> close that connection;
* ApiVersions in a version this broker does not speak: the v0 answer with UNSUPPORTED_VERSION and ApiVersions' own
  range (KIP-511);
* a handler failure: Kafka's generic error answer (``getErrorResponse``) with the exception's error code, logged in
  server.log; the broker keeps serving.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from broker.apis.convert import (
    kafka_string_to_uuid,
    leader_and_isr_from_body,
    stop_replica_from_body,
    update_metadata_from_body,
)
from broker.apis.data_plane import DataPlane
from broker.apis.handler import Handler, HandlerResult
from broker.apis.metadata import api_versions_body, metadata_body, valid_client_software
from broker.log4j import Log4j, default_log4j
from broker.network.request import Request, Response
from broker.protocol import (
    API_NAMES,
    REGISTRY,
    SUPPORTED,
    ApiKey,
    CorruptRequest,
    ErrorCode,
    RequestHeader,
    UnknownApi,
    UnsupportedVersion,
    decode_request,
    encode_response,
    error_response,
    request_to_json,
    response_to_json,
)
from broker.protocol.codec import DECODE_ERRORS, message_codec
from broker.protocol.error_bodies import error_body
from broker.protocol.headers import read_request_header
from broker.protocol.releases import advertised_ranges
from broker.state import BrokerState, ControllerMovedError, Endpoint, LiveBroker, TopicPartition

__all__ = ["Handler", "HandlerResult", "KafkaApis", "decode_ignoring_trailing_bytes"]

_ZERO_UUID = uuid.UUID(int=0)
_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def decode_ignoring_trailing_bytes(frame: bytes) -> tuple[RequestHeader, dict[str, Any]] | None:
    """Decode a request whose body is followed by extra bytes, as Kafka's parser does (it never checks that the
    buffer was consumed); None when the request is garbled before its end.

    Real clients depend on it: librdkafka 2.x sends Metadata v9+ "all topics" with its 4-byte array-count
    placeholder left in place (``00 00 00 00`` instead of the varint ``00``), so three bytes follow the body; Kafka
    reads the padding as AllowAutoTopicCreation=false etc. and ignores the rest.
    """
    try:
        header, pos = read_request_header(bytes(frame))
        lo, hi = SUPPORTED.get(header.api_key, (1, 0))
        if not lo <= header.api_version <= hi:
            return None
        _, decoder = message_codec(REGISTRY[header.api_key][0], header.api_version)
        body, _end = decoder(bytes(frame), pos)
    except (CorruptRequest, *DECODE_ERRORS):
        return None
    return header, body


class KafkaApis:
    """The request handlers of one broker.

    Args:
        state: the broker's control-plane state (epochs, partitions, metadata cache, state-change lock).
        advertised_listeners: listener name -> (host, port) this broker advertises (its own Metadata answer before
            any UpdateMetadata arrived).
        security_protocols: listener name -> security protocol name (default: the listener name, else PLAINTEXT).
        cluster_id: the cluster id Metadata v2+ returns.
        rack: ``broker.rack``.
        log4j: the logging hierarchy (server.log's ``kafka.server.KafkaApis``, the request logger's level).
        release: the Kafka release whose ApiVersions ranges are advertised (``inter.broker.protocol.version``,
            see :mod:`broker.protocol.releases`); None: the codec's whole ranges.
    """

    def __init__(self, state: BrokerState, *, advertised_listeners: Mapping[str, tuple[str, int]],
                 security_protocols: Mapping[str, str] | None = None, cluster_id: str | None = None,
                 rack: str | None = None, log4j: Log4j | None = None, release: str | None = None) -> None:
        self.state = state
        self.release = release
        self.cluster_id = cluster_id
        protocols = security_protocols or {}
        endpoints = tuple(
            Endpoint(name, host, port, _PROTOCOL_IDS.get(protocols.get(name, name), 0))
            for name, (host, port) in advertised_listeners.items())
        self.self_broker = LiveBroker(state.broker_id, endpoints, rack)
        lg = log4j or default_log4j()
        self._log = lg.get_logger("kafka.server.KafkaApis", f"[KafkaApi-{state.broker_id}] ")
        self._request_logger = lg.get_logger("kafka.request.logger")
        self._handlers: dict[int, Handler] = {
            ApiKey.API_VERSIONS: self._api_versions,
            ApiKey.METADATA: self._metadata,
            ApiKey.LEADER_AND_ISR: self._leader_and_isr,
            ApiKey.UPDATE_METADATA: self._update_metadata,
            ApiKey.STOP_REPLICA: self._stop_replica,
        }
        self._closers: list[Callable[[], None]] = []
        # The logs, leadership checks and topic management behind the data-plane handlers, once
        # broker.apis.install.install_data_plane has installed them (None: only the control-plane APIs).
        self.data_plane: DataPlane | None = None

    # ------------------------------------------------------------------------------------------------ dispatch
    def register(self, api_key: int, handler: Handler) -> None:
        """Add (or replace) the handler of an API; it is then advertised in ApiVersions.

        Raises:
            ValueError: the codec does not implement ``api_key``.
        """
        if api_key not in SUPPORTED:
            raise ValueError(f"API key {api_key} is not implemented by broker.protocol")
        self._handlers[api_key] = handler

    def handler(self, api_key: int) -> Handler:
        """The current handler of an API (to wrap it). Raises KeyError when there is none."""
        return self._handlers[api_key]

    def add_closer(self, closer: Callable[[], None]) -> None:
        """Run ``closer`` at :meth:`close` (the data plane's log manager, purgatory, ...), last added first."""
        self._closers.append(closer)

    def close(self) -> None:
        """Release what the handlers hold (KafkaServer.shutdown calls it after the handler pools stopped)."""
        while self._closers:
            self._closers.pop()()

    def advertised_versions(self) -> dict[int, tuple[int, int]]:
        """api_key -> (min, max) that ApiVersions advertises: every handled API in the release's range, cut to
        what the codec implements."""
        return advertised_ranges(self.release, self._handlers)

    def handle(self, request: Request) -> Response:
        """Handle one request (thread-safe; called concurrently by the handler threads)."""
        try:
            header, body = decode_request(request.frame)
        except UnsupportedVersion as exc:
            return self._unsupported_version(request, exc)
        except UnknownApi as exc:
            self._log.info(f"Closing connection {request.connection_id} from {request.client_host}: unknown API key "
                           f"{exc.header.api_key} (planewatch)")
            return Response(None, close=True)
        except CorruptRequest as exc:
            lenient = decode_ignoring_trailing_bytes(request.frame)
            if lenient is None:
                self._log.info(f"Closing connection {request.connection_id} from {request.client_host}: {exc} "
                               "(planewatch)")
                return Response(None, close=True, metric_name=API_NAMES.get(request.header.api_key, ""))
            header, body = lenient
        name = API_NAMES.get(header.api_key, str(header.api_key))
        handler = self._handlers.get(header.api_key)
        try:
            if handler is None:
                raise NotImplementedError(f"No handler for request api key {name}")
            result = handler(request, header, body)
        except ControllerMovedError as exc:
            self._log.error(f"Unexpected error handling request {header} with listener {request.listener} from "
                            f"connection {request.connection_id}: "
                            f"org.apache.kafka.common.errors.ControllerMovedException: {exc}")
            return self._error(request, header, body, name, exc.error_code)
        except Exception:  # a handler bug must not take the broker down: Kafka's handleError
            self._log.error(f"Unexpected error handling request {header} with listener {request.listener} from "
                            f"connection {request.connection_id}", exc_info=True)
            return self._error(request, header, body, name, ErrorCode.UNKNOWN_SERVER_ERROR)
        if result.no_response:
            logged = request_to_json(header, body) if self._request_logger.is_debug_enabled() else None
            return Response(None, close=result.close, metric_name=result.metric_name or name,
                            error_codes=result.error_codes, request_json=logged)
        frame = encode_response(header, result.body)
        req_json, resp_json = self._json(header, body, result.body)
        return Response(frame, metric_name=result.metric_name or name, error_codes=result.error_codes,
                        request_json=req_json, response_json=resp_json)

    def _json(self, header: RequestHeader, body: dict[str, Any],
              response: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        if not self._request_logger.is_debug_enabled():
            return None, None  # the request log is off: do not pay for the JSON
        return request_to_json(header, body), response_to_json(header.api_key, header.api_version, response)

    def _error(self, request: Request, header: RequestHeader, body: dict[str, Any], name: str,
               code: int) -> Response:
        frame = error_response(header, code, body)
        if frame is None:
            return Response(None, close=True, metric_name=name)
        if not self._request_logger.is_debug_enabled():
            return Response(frame, metric_name=name, error_codes=(int(code),))
        # the request log shows the error answer as sent (Kafka logs getErrorResponse's body, e.g. {"errorCode":11})
        answer = response_to_json(header.api_key, header.api_version,
                                  error_body(header.api_key, header.api_version, int(code), body))
        return Response(frame, metric_name=name, error_codes=(int(code),), request_json=request_to_json(header, body),
                        response_json=answer)

    def _unsupported_version(self, request: Request, exc: UnsupportedVersion) -> Response:
        header = exc.header
        name = API_NAMES.get(header.api_key, str(header.api_key))
        if header.api_key == ApiKey.API_VERSIONS:
            frame = error_response(header, ErrorCode.UNSUPPORTED_VERSION)
            logged = self._request_logger.is_debug_enabled()
            lo, hi = SUPPORTED[ApiKey.API_VERSIONS]
            answer = {"errorCode": int(ErrorCode.UNSUPPORTED_VERSION),
                      "apiKeys": [{"apiKey": int(ApiKey.API_VERSIONS), "minVersion": lo, "maxVersion": hi}]}
            return Response(frame, metric_name=name, error_codes=(int(ErrorCode.UNSUPPORTED_VERSION),),
                            request_json={} if logged else None, response_json=answer if logged else None)
        self._log.info(f"Closing connection {request.connection_id} from {request.client_host}: unsupported version "
                       f"{header.api_version} of {name} (supported {exc.supported[0]}-{exc.supported[1]}) "
                       "(planewatch)")
        return Response(None, close=True, metric_name=name)

    # ------------------------------------------------------------------------------------------------ handlers
    def _api_versions(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request
        if not valid_client_software(body, header.api_version):
            return HandlerResult({"error_code": ErrorCode.INVALID_REQUEST, "api_keys": [], "throttle_time_ms": 0},
                                 (ErrorCode.INVALID_REQUEST,))
        return HandlerResult(api_versions_body(self.advertised_versions()), (ErrorCode.NONE,))

    def _metadata(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        resp = metadata_body(self.state.metadata_cache.snapshot, body, header.api_version, request.listener,
                             self.self_broker, self.cluster_id)
        codes = [t["error_code"] for t in resp["topics"]]
        codes += [p["error_code"] for t in resp["topics"] for p in t["partitions"]]
        return HandlerResult(resp, tuple(codes) or (ErrorCode.NONE,))

    def _stale_broker_epoch(self, what: str, broker_epoch: int, max_broker_epoch: int | None) -> bool:
        if not self.state.is_broker_epoch_stale(broker_epoch, max_broker_epoch):
            return False
        current = self.state.broker_epoch
        if max_broker_epoch is not None:  # LinkedIn-fork text (FACTS.md section 5)
            self._log.info(f"Received {what} request with stale broker epoch info (broker epoch:{broker_epoch}}},max "
                           f"broker epoch:{max_broker_epoch}) when the current broker epoch is {current}")
        else:
            self._log.info(f"Received {what} request with broker epoch {broker_epoch} smaller than the current "
                           f"broker epoch {current}")
        return True

    def _leader_and_isr(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request
        model = leader_and_isr_from_body(body, header.api_version)
        errors: list[tuple[TopicPartition, int]]
        top: int
        if self._stale_broker_epoch("LeaderAndIsr", model.broker_epoch, model.max_broker_epoch):
            errors = [(p.tp, ErrorCode.STALE_BROKER_EPOCH) for p in model.partitions]
            top = ErrorCode.STALE_BROKER_EPOCH
        else:
            result = self.state.become_leader_or_follower(header.correlation_id, model)
            errors, top = result.partition_errors, result.error
        codes = (top, *(e for _, e in errors))
        if header.api_version < 5:
            return HandlerResult({"error_code": top, "partition_errors": [
                {"topic_name": tp.topic, "partition_index": tp.partition, "error_code": e} for tp, e in errors]}, codes)
        by_topic: dict[str, list[tuple[TopicPartition, int]]] = {}
        for tp, e in errors:
            by_topic.setdefault(tp.topic, []).append((tp, e))
        topics = []
        for topic, errs in by_topic.items():
            tid = model.topic_ids.get(topic)
            topics.append({"topic_id": kafka_string_to_uuid(tid) if tid else _ZERO_UUID, "partition_errors": [
                {"partition_index": tp.partition, "error_code": e} for tp, e in errs]})
        return HandlerResult({"error_code": top, "topics": topics}, codes)

    def _update_metadata(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request
        model = update_metadata_from_body(body, header.api_version)
        if self._stale_broker_epoch("update metadata", model.broker_epoch, model.max_broker_epoch):
            return HandlerResult({"error_code": ErrorCode.STALE_BROKER_EPOCH}, (ErrorCode.STALE_BROKER_EPOCH,))
        self.state.maybe_update_metadata_cache(header.correlation_id, model)
        return HandlerResult({"error_code": ErrorCode.NONE}, (ErrorCode.NONE,))

    def _stop_replica(self, request: Request, header: RequestHeader, body: dict[str, Any]) -> HandlerResult:
        del request
        model = stop_replica_from_body(body, header.api_version)
        if self._stale_broker_epoch("stop replica", model.broker_epoch, model.max_broker_epoch):
            stale = ErrorCode.STALE_BROKER_EPOCH
            return HandlerResult({"error_code": stale, "partition_errors": []}, (stale,))
        result = self.state.stop_replicas(header.correlation_id, model)
        return HandlerResult({"error_code": result.error, "partition_errors": [
            {"topic_name": tp.topic, "partition_index": tp.partition, "error_code": e}
            for tp, e in result.partition_errors]}, (result.error, *(e for _, e in result.partition_errors)))
