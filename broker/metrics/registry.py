"""A small Yammer-like metrics registry with Kafka's MBean names.

Kafka's broker metrics are Yammer 2.2 metrics registered by ``KafkaMetricsGroup`` under JMX names
``<package>:type=<SimpleClassName>,name=<name>[,tag=value...]`` (tags in insertion order). This module offers the
three kinds the network layer uses, each exposing the same JMX attributes Kafka's do:

* :class:`Gauge`: ``Value`` (or a custom attribute such as ``connection-count`` for Kafka-metrics sensors);
* :class:`Meter`: ``Count``, ``MeanRate``, ``OneMinuteRate``, ``FiveMinuteRate``, ``FifteenMinuteRate``. Rates are
  exponentially weighted moving averages ticked every 5 s with Yammer's alphas. ``rate_unit_ns`` is the rate unit: 1e9
  for events/second, 1 for Kafka's "percent" meters declared with ``TimeUnit.NANOSECONDS`` (they are marked with idle
  or blocked nanoseconds, so the rate is a fraction 0..1);
* :class:`Histogram`: ``Count``, ``Min``, ``Max``, ``Mean``, ``StdDev`` (exact, Welford) and the percentiles
  ``50th 75th 95th 98th 99th 999thPercentile`` over a bounded uniform reservoir (Vitter's algorithm R).

Registration is get-or-create like Yammer's ``newHistogram``: the data- and control-plane request channels register
the same RequestMetrics names and share one histogram. Every metric is thread-safe.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["Gauge", "Histogram", "Meter", "Metric", "MetricName", "MetricsRegistry"]

# Yammer's EWMA: ticks every 5 s; alpha = 1 - exp(-5 s / window).
TICK_INTERVAL_NS = 5_000_000_000
_ALPHAS = {minutes: 1.0 - math.exp(-5.0 / 60.0 / minutes) for minutes in (1, 5, 15)}
# Yammer's default reservoir holds 1028 samples (about 99.9% confidence, 5% margin for a normal distribution).
RESERVOIR_SIZE = 1028
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("50thPercentile", 0.50),
    ("75thPercentile", 0.75),
    ("95thPercentile", 0.95),
    ("98thPercentile", 0.98),
    ("99thPercentile", 0.99),
    ("999thPercentile", 0.999),
)


@dataclass(frozen=True, slots=True)
class MetricName:
    """A JMX ObjectName as Kafka builds it: ``domain:type=T,name=N[,k=v...]``."""

    domain: str
    type: str
    name: str
    tags: tuple[tuple[str, str], ...] = ()

    @property
    def mbean(self) -> str:
        # Kafka-metrics MBeans (e.g. socket-server-metrics) have no name= key: pass name="".
        props = [("type", self.type), *([("name", self.name)] if self.name else []), *self.tags]
        return f"{self.domain}:" + ",".join(f"{k}={v}" for k, v in props)

    @classmethod
    def of(cls, domain: str, type_: str, name: str, **tags: object) -> MetricName:
        """Build a name; keyword tags keep their order."""
        return cls(domain, type_, name, tuple((k, str(v)) for k, v in tags.items()))


class Metric:
    """Base: a metric exposes JMX-like attributes."""

    def attributes(self) -> dict[str, float]:
        """Attribute name -> current value."""
        raise NotImplementedError


class Gauge(Metric):
    """Values read on demand from callbacks (exceptions read as NaN so a reporter never dies).

    One attribute (``Value``) for Yammer gauges; several for a Kafka-metrics MBean such as
    ``kafka.server:type=socket-server-metrics,listener=L,networkProcessor=N`` (``connection-count``, ...).
    """

    def __init__(self, fn: Callable[[], float], attribute: str = "Value") -> None:
        self._fns: dict[str, Callable[[], float]] = {attribute: fn}

    def add(self, attribute: str, fn: Callable[[], float]) -> None:
        """Add another attribute to this MBean."""
        self._fns[attribute] = fn

    def has_attribute(self, attribute: str) -> bool:
        return attribute in self._fns

    def value(self, attribute: str = "Value") -> float:
        try:
            return float(self._fns[attribute]())
        except Exception:
            return math.nan

    def attributes(self) -> dict[str, float]:
        return {attr: self.value(attr) for attr in list(self._fns)}


class _Ewma:
    def __init__(self, alpha: float) -> None:
        self.alpha = alpha
        self.rate = 0.0  # events per nanosecond
        self.initialised = False
        self.uncounted = 0.0

    def tick(self) -> None:
        instant = self.uncounted / TICK_INTERVAL_NS
        self.uncounted = 0.0
        if self.initialised:
            self.rate += self.alpha * (instant - self.rate)
        else:
            self.rate = instant
            self.initialised = True


class Meter(Metric):
    """Yammer's Meter: a count and its mean and 1/5/15-minute EWMA rates."""

    def __init__(self, rate_unit_ns: float = 1e9, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock = clock
        self._unit = rate_unit_ns
        self._lock = threading.Lock()
        self._count = 0.0
        self._start = clock()
        self._last_tick = self._start
        self._ewmas = {m: _Ewma(a) for m, a in _ALPHAS.items()}

    def _tick_if_necessary(self) -> None:
        now = self._clock()
        ticks = (now - self._last_tick) // TICK_INTERVAL_NS
        if ticks <= 0:
            return
        self._last_tick += ticks * TICK_INTERVAL_NS
        for _ in range(min(int(ticks), 10_000)):  # after ~14 h idle every EWMA is 0 anyway
            for ewma in self._ewmas.values():
                ewma.tick()

    def mark(self, n: float = 1.0) -> None:
        """Record ``n`` events (for NANOSECONDS meters: ``n`` nanoseconds)."""
        with self._lock:
            self._tick_if_necessary()
            self._count += n
            for ewma in self._ewmas.values():
                ewma.uncounted += n

    @property
    def count(self) -> float:
        return self._count

    def mean_rate(self) -> float:
        with self._lock:
            elapsed = self._clock() - self._start
            return 0.0 if elapsed <= 0 else self._count / elapsed * self._unit

    def rate(self, minutes: int) -> float:
        with self._lock:
            self._tick_if_necessary()
            return self._ewmas[minutes].rate * self._unit

    def attributes(self) -> dict[str, float]:
        return {
            "Count": self._count,
            "MeanRate": self.mean_rate(),
            "OneMinuteRate": self.rate(1),
            "FiveMinuteRate": self.rate(5),
            "FifteenMinuteRate": self.rate(15),
        }


class Histogram(Metric):
    """Count/min/max/mean/stddev over all updates; percentiles over a uniform reservoir of the latest updates."""

    def __init__(self, reservoir_size: int = RESERVOIR_SIZE, rng: random.Random | None = None) -> None:
        self._size = reservoir_size
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._values: list[float] = []
        self._count = 0
        self._min = math.inf
        self._max = -math.inf
        self._mean = 0.0
        self._m2 = 0.0

    def update(self, value: float) -> None:
        """Record one value."""
        with self._lock:
            self._count += 1
            self._min = min(self._min, value)
            self._max = max(self._max, value)
            delta = value - self._mean
            self._mean += delta / self._count
            self._m2 += delta * (value - self._mean)
            if len(self._values) < self._size:
                self._values.append(value)
            else:
                slot = self._rng.randrange(self._count)
                if slot < self._size:
                    self._values[slot] = value

    @property
    def count(self) -> int:
        return self._count

    def percentile(self, quantile: float) -> float:
        """Yammer's ``Snapshot.getValue``: linear interpolation at position quantile * (n + 1)."""
        with self._lock:
            values = sorted(self._values)
        return _quantile(values, quantile)

    def attributes(self) -> dict[str, float]:
        with self._lock:
            values = sorted(self._values)
            count = self._count
            attrs = {
                "Count": float(count),
                "Min": self._min if count else 0.0,
                "Max": self._max if count else 0.0,
                "Mean": self._mean if count else 0.0,
                "StdDev": math.sqrt(self._m2 / (count - 1)) if count > 1 else 0.0,
            }
        for attr, q in PERCENTILES:
            attrs[attr] = _quantile(values, q)
        return attrs


def _quantile(values: list[float], quantile: float) -> float:
    if not values:
        return 0.0
    pos = quantile * (len(values) + 1)
    if pos < 1:
        return values[0]
    if pos >= len(values):
        return values[-1]
    lower = values[int(pos) - 1]
    upper = values[int(pos)]
    return lower + (pos - math.floor(pos)) * (upper - lower)


class MetricsRegistry:
    """Name -> metric, get-or-create, thread-safe; iteration yields a stable snapshot."""

    def __init__(self, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._metrics: dict[str, tuple[MetricName, Metric]] = {}

    def _get_or_create(self, name: MetricName, factory: Callable[[], Metric], kind: type[Metric]) -> Metric:
        with self._lock:
            existing = self._metrics.get(name.mbean)
            if existing is not None:
                if not isinstance(existing[1], kind):
                    raise TypeError(f"{name.mbean} is already registered as {type(existing[1]).__name__}")
                return existing[1]
            metric = factory()
            self._metrics[name.mbean] = (name, metric)
            return metric

    def gauge(self, name: MetricName, fn: Callable[[], float], attribute: str = "Value") -> Gauge:
        """Register a gauge; a second registration under the same name and attribute keeps the first (as Yammer),
        under the same name with a new attribute adds that attribute to the MBean."""
        metric = self._get_or_create(name, lambda: Gauge(fn, attribute), Gauge)
        assert isinstance(metric, Gauge)
        if not metric.has_attribute(attribute):
            metric.add(attribute, fn)
        return metric

    def meter(self, name: MetricName, rate_unit_ns: float = 1e9) -> Meter:
        """Get or create a meter (rate_unit_ns=1 for Kafka's NANOSECONDS "percent" meters)."""
        metric = self._get_or_create(name, lambda: Meter(rate_unit_ns, self._clock), Meter)
        assert isinstance(metric, Meter)
        return metric

    def histogram(self, name: MetricName) -> Histogram:
        """Get or create a histogram."""
        metric = self._get_or_create(name, Histogram, Histogram)
        assert isinstance(metric, Histogram)
        return metric

    def remove(self, name: MetricName) -> None:
        """Unregister (a processor that stops removes its per-processor gauges)."""
        with self._lock:
            self._metrics.pop(name.mbean, None)

    def get(self, mbean: str) -> Metric | None:
        """Look a metric up by its JMX name string."""
        with self._lock:
            entry = self._metrics.get(mbean)
        return None if entry is None else entry[1]

    def __iter__(self) -> Iterator[tuple[MetricName, Metric]]:
        with self._lock:
            items = list(self._metrics.values())
        return iter(items)

    def samples(self) -> list[tuple[MetricName, str, float]]:
        """Every (name, attribute, value) now, in registration order."""
        out: list[tuple[MetricName, str, float]] = []
        for name, metric in self:
            for attr, value in metric.attributes().items():
                out.append((name, attr, value))
        return out
