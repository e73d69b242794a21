"""Kafka's ``org.apache.kafka.common.TopicPartition``: the one partition key every broker subsystem uses."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["TopicPartition"]


class TopicPartition(NamedTuple):
    """A topic partition; ``str()`` gives Kafka's ``topic-partition`` (also the partition's directory name)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def parse_dir_name(cls, name: str) -> TopicPartition:
        """Parse ``<topic>-<partition>``.

        Raises:
            ValueError: not a partition directory name.
        """
        topic, sep, part = name.rpartition("-")
        if not sep or not topic or not part.isdigit():
            raise ValueError(f"Found directory {name}, '{name}' is not in the form of topic-partition")
        return cls(topic, int(part))
