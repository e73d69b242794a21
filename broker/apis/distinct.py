"""Repeated names in one request, collapsed as Kafka's handlers collapse them (pure helpers).

Kafka turns most name arrays into a set or a map before doing any work: Metadata's topics (``toSet``), Fetch's and
OffsetCommit's partitions (a ``LinkedHashMap``: the first position, the last value), DeleteGroups' groups
(``distinct``), DeleteRecords' partitions. A handler here does the same, so the work and the answer of a request
grow with its distinct names, not with how often one name is repeated. Where Kafka answers every occurrence of a
repeated name with an error (CreateTopics, CreatePartitions: INVALID_REQUEST; ListOffsets: INVALID_REQUEST per
duplicated partition), :func:`repeated` finds them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

__all__ = ["last_by_key", "repeated"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def last_by_key(items: Iterable[V], key: Callable[[V], K]) -> dict[K, V]:
    """The last item of each key, the keys in the order they first appear (Java's ``LinkedHashMap.put``)."""
    out: dict[K, V] = {}
    for item in items:
        out[key(item)] = item
    return out


def repeated(keys: Iterable[K]) -> set[K]:
    """The keys that occur more than once."""
    return {k for k, n in Counter(keys).items() if n > 1}
