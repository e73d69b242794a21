"""The controller's topic config overrides (Kafka's ``/config/topics/<topic>``) and their change versions.

Theory of operation
-------------------
Kafka in ZooKeeper mode keeps a topic's overrides in ``/config/topics/<topic>`` and announces every change with a
sequential ``/config/changes/config_change_<n>`` node that the ``DynamicConfigManager`` of every broker watches;
each broker then applies the topic's new overrides to its logs, leader and follower replicas alike.

Here the controller holds a :class:`TopicConfigStore`: each topic's overrides with the version of its last change,
a counter over all topics (the notification's sequence number). The controller persists it with its state
(:meth:`to_json` / :meth:`from_json`) and answers the current :attr:`~TopicConfigStore.version` in every heartbeat;
a broker that has applied up to version ``v`` asks for :meth:`~TopicConfigStore.changes_since` ``v`` and applies
what it gets (:mod:`broker.cluster.topic_config_sync`). A broker starting from 0 gets every topic's overrides. A
topic whose overrides were all deleted stays in the store with an empty set, so brokers learn of the deletion.

The store has its own lock: the controller's event thread writes it, and brokers read it from the registration
channel's threads without queueing behind the controller's events (a broker asks while handling a LeaderAndIsr the
event thread has just sent).

:func:`check_overrides` is Kafka's ``LogConfig.validate`` (names, then values; no broker default is needed for
that), with Kafka's messages.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from broker.log.config import LogConfig

__all__ = ["TopicConfigStore", "check_overrides"]


def check_overrides(overrides: Mapping[str, str]) -> None:
    """Validate a topic's overrides as Kafka's ``LogConfig.validate``.

    Raises:
        ValueError: an unknown name (``Unknown topic config name: <name>``) or a bad value (``Invalid value <v> for
            configuration <name>: <reason>``): Kafka's ``InvalidConfigurationException`` / ``ConfigException``.
    """
    LogConfig().with_overrides(overrides)


class TopicConfigStore:
    """Topic config overrides with change versions (see the module docstring). Thread-safe."""

    def __init__(self, version: int = 0, configs: Mapping[str, tuple[int, Mapping[str, str]]] | None = None) -> None:
        self._lock = threading.Lock()
        self._version = version
        self._configs: dict[str, tuple[int, dict[str, str]]] = {
            t: (v, dict(o)) for t, (v, o) in (configs or {}).items()}

    @property
    def version(self) -> int:
        """The version of the latest change (0: none yet)."""
        with self._lock:
            return self._version

    def overrides(self, topic: str) -> dict[str, str]:
        """``topic``'s overrides (empty when it has none)."""
        with self._lock:
            entry = self._configs.get(topic)
            return dict(entry[1]) if entry is not None else {}

    def put(self, topic: str, overrides: Mapping[str, str]) -> int:
        """Replace ``topic``'s overrides; the new version."""
        with self._lock:
            self._version += 1
            self._configs[topic] = (self._version, {str(k): str(v) for k, v in overrides.items()})
            return self._version

    def changes_since(self, version: int) -> tuple[int, dict[str, dict[str, str]]]:
        """The current version and the overrides of every topic changed after ``version``."""
        with self._lock:
            return self._version, {t: dict(o) for t, (v, o) in sorted(self._configs.items()) if v > version}

    def to_json(self) -> dict[str, Any]:
        """The persisted form (part of ``controller-state.json``)."""
        with self._lock:
            return {"version": self._version,
                    "topics": {t: {"version": v, "configs": o} for t, (v, o) in sorted(self._configs.items())}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopicConfigStore:
        """The store :meth:`to_json` wrote (an empty store for ``{}``, a state saved before topic configs)."""
        topics = data.get("topics") or {}
        return cls(int(data.get("version", 0)),
                   {str(t): (int(e["version"]), {str(k): str(v) for k, v in e["configs"].items()})
                    for t, e in topics.items()})
