"""The broker's request handlers (Kafka's ``KafkaApis``)."""

from __future__ import annotations

from broker.apis.kafka_apis import Handler, HandlerResult, KafkaApis

__all__ = ["Handler", "HandlerResult", "KafkaApis"]
