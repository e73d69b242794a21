"""The controller's request batches: state-change lines of Kafka 2.8's ``AbstractControllerBrokerRequestBatch``.

:class:`ControlRequestSender` turns a controller decision (partition states for a broker) into a request of the
version that broker speaks, writes the controller-side state-change lines (INFO summary, TRACE per partition, with
the prefix ``[Controller id=N epoch=E]``) and queues it on the :class:`~.channel.ControllerChannelManager`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future

from broker.controller.channel import ControllerChannelManager, ControlResponse
from broker.controller.requests import (
    BrokerNode,
    leader_and_isr_body,
    scala_set,
    stop_replica_bodies,
    update_metadata_body,
)
from broker.protocol import ApiKey
from broker.state.model import CachedPartition, LeaderAndIsrPartition, LiveBroker, StopReplicaPartition

__all__ = ["ControlRequestSender"]

Callback = Callable[[ControlResponse], None]


class ControlRequestSender:
    """Builds, logs and queues LeaderAndIsr / UpdateMetadata / StopReplica for the brokers of one channel."""

    def __init__(self, channel: ControllerChannelManager) -> None:
        self.channel = channel

    def send_leader_and_isr(self, broker_id: int, version: int, partitions: Sequence[LeaderAndIsrPartition], *,
                            broker_epoch: int = -1, live_leaders: Iterable[BrokerNode] = (),
                            topic_ids: Mapping[str, str] | None = None, max_broker_epoch: int | None = None,
                            callback: Callback | None = None, timeout_ms: int | None = None,
                            ) -> Future[ControlResponse]:
        """``sendLeaderAndIsrRequest`` for one broker: TRACE per partition, INFO summary, then queue."""
        log = self.channel.state_change_logger()
        leaders = 0
        for p in partitions:
            kind = "become-leader" if p.leader == broker_id else "become-follower"
            leaders += kind == "become-leader"
            if log.is_trace_enabled():
                log.trace(f"Sending {kind} LeaderAndIsr request {p.to_kafka_string()} to broker {broker_id} for "
                          f"partition {p.tp}")
        log.info(f"Sending LeaderAndIsr request to broker {broker_id} with {leaders} become-leader and "
                 f"{len(partitions) - leaders} become-follower partitions")
        body = leader_and_isr_body(version, controller_id=self.channel.controller_id,
                                   controller_epoch=self.channel.controller_epoch, broker_epoch=broker_epoch,
                                   partitions=partitions, live_leaders=live_leaders, topic_ids=topic_ids,
                                   max_broker_epoch=max_broker_epoch)
        return self.channel.send_request(broker_id, ApiKey.LEADER_AND_ISR, version, body, callback, timeout_ms)

    def send_update_metadata(self, broker_ids: Iterable[int], version: int, partitions: Sequence[CachedPartition],
                             live_brokers: Sequence[LiveBroker], *, broker_epochs: Mapping[int, int] | None = None,
                             topic_ids: Mapping[str, str] | None = None, max_broker_epoch: int | None = None,
                             callback: Callback | None = None, timeout_ms: int | None = None,
                             ) -> dict[int, Future[ControlResponse]]:
        """``sendUpdateMetadataRequests``: one INFO line for the broker set, then one request per broker.

        With ``max_broker_epoch`` set, every broker gets the same body with broker epoch -1 (the cacheable
        UpdateMetadata design); otherwise each body carries that broker's epoch from ``broker_epochs``.
        """
        ids = list(dict.fromkeys(broker_ids))
        log = self.channel.state_change_logger()
        log.info(f"Sending UpdateMetadata request to brokers {scala_set(ids)} for {len(partitions)} partitions")
        if max_broker_epoch is not None:  # one payload, serialized once, for every broker
            shared = update_metadata_body(version, controller_id=self.channel.controller_id,
                                          controller_epoch=self.channel.controller_epoch, broker_epoch=-1,
                                          partitions=partitions, live_brokers=live_brokers, topic_ids=topic_ids,
                                          max_broker_epoch=max_broker_epoch)
            return self.channel.send_encoded(ids, ApiKey.UPDATE_METADATA, version, shared, callback, timeout_ms)
        epochs = broker_epochs or {}
        futures: dict[int, Future[ControlResponse]] = {}
        for bid in ids:
            body = update_metadata_body(
                version, controller_id=self.channel.controller_id, controller_epoch=self.channel.controller_epoch,
                broker_epoch=epochs.get(bid, -1), partitions=partitions, live_brokers=live_brokers,
                topic_ids=topic_ids)
            futures[bid] = self.channel.send_request(bid, ApiKey.UPDATE_METADATA, version, body, callback, timeout_ms)
        return futures

    def send_stop_replica(self, broker_id: int, version: int, partitions: Sequence[StopReplicaPartition], *,
                          broker_epoch: int = -1, max_broker_epoch: int | None = None,
                          callback: Callback | None = None, timeout_ms: int | None = None,
                          ) -> list[Future[ControlResponse]]:
        """``sendStopReplicaRequests`` for one broker (v0-2: one request per delete flag)."""
        log = self.channel.state_change_logger()
        if log.is_trace_enabled():
            for p in partitions:
                log.trace(f"Sending StopReplica request {p.to_kafka_string()} to broker {broker_id} for partition "
                          f"{p.tp}")
        futures = []
        for delete, body in stop_replica_bodies(version, controller_id=self.channel.controller_id,
                                                controller_epoch=self.channel.controller_epoch,
                                                broker_epoch=broker_epoch, partitions=partitions,
                                                max_broker_epoch=max_broker_epoch):
            if delete is None:
                log.info(f"Sending StopReplica request for {len(partitions)} replicas to broker {broker_id}")
            else:
                n = sum(1 for p in partitions if p.delete == delete)
                log.info(f"Sending StopReplica request (delete = {str(delete).lower()}) for {n} replicas to broker "
                         f"{broker_id}")
            futures.append(self.channel.send_request(broker_id, ApiKey.STOP_REPLICA, version, body, callback,
                                                     timeout_ms))
        return futures
