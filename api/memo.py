"""Answers derived from table snapshots and query results, remembered while those stay the same objects.

The store hands out one pyarrow Table per table version (a snapshot) and per (query, versions) (a result), so
"the inputs are the same objects" means "nothing the answer depends on has moved". A route keeps its serialized
answer here: a repeated request costs a dictionary lookup instead of filtering, building pydantic models and
dumping JSON again (several ms of CPU under the GIL for a page of rows, which under 200 concurrent requests is
what the machine spends its time on).

Two rules:

* **Inputs are held weakly.** An entry never keeps an old snapshot alive; once its inputs are gone it is a miss
  (and is dropped when it reaches the end of the LRU order).
* **One computation per key at a time** (single flight). When the pipeline commits, every request in flight
  misses at once; the first computes, the others wait for its value (or its exception) instead of all computing
  the same answer on the same two cores.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Generic, TypeVar, cast

__all__ = ["Memo"]

T = TypeVar("T")


def _refs(inputs: Sequence[object | None]) -> tuple[Any, ...]:
    return tuple(None if x is None else weakref.ref(x) for x in inputs)


def _same(refs: tuple[Any, ...], inputs: Sequence[object | None]) -> bool:
    if len(refs) != len(inputs):
        return False
    return all(x is None if r is None else (x is not None and r() is x) for r, x in zip(refs, inputs, strict=True))


class _Flight(Generic[T]):
    """One computation under way; the other requests for the same key and inputs wait for it."""

    def __init__(self, refs: tuple[Any, ...]) -> None:
        self.refs = refs
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None

    def result(self) -> T:
        self.done.wait()
        if self.error is not None:
            raise self.error
        return cast(T, self.value)


class Memo:
    """A bounded, thread-safe map from key to a value computed from `inputs` (objects compared by identity).

    Args:
        entries: values remembered at most (least recently used first out).
    """

    def __init__(self, entries: int) -> None:
        self._entries_max = entries
        self._values: OrderedDict[Hashable, tuple[tuple[Any, ...], object]] = OrderedDict()
        self._flights: dict[Hashable, _Flight[Any]] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def get(self, key: Hashable, inputs: Sequence[object | None], compute: Callable[[], T]) -> T:
        """The value remembered for `key` if it was computed from these very `inputs`, else `compute()` (once for
        all the threads asking at the same time; its exception reaches each of them and nothing is remembered)."""
        with self._lock:
            hit = self._values.get(key)
            if hit is not None and _same(hit[0], inputs):
                self._values.move_to_end(key)
                return cast(T, hit[1])
            flight = self._flights.get(key)
            leader = flight is None or not _same(flight.refs, inputs)
            if leader:
                flight = _Flight[T](_refs(inputs))
                self._flights[key] = flight
        assert flight is not None
        if not leader:
            return cast(T, flight.result())
        try:
            value = compute()
        except BaseException as e:
            flight.error = e
            raise
        else:
            flight.value = value
            with self._lock:
                self._values[key] = (flight.refs, value)
                self._values.move_to_end(key)
                while len(self._values) > self._entries_max:
                    self._values.popitem(last=False)
            return value
        finally:
            with self._lock:
                if self._flights.get(key) is flight:
                    del self._flights[key]
            flight.done.set()
