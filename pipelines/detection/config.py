"""DetectionConfig: every threshold and time limit of the detectors, pairing and alert lifecycle.

Loaded from the `detection:` section of conf/pipeline.yaml. Per-cluster overrides live under
`detection.clusters.<name>` and replace individual keys (`thresholds.<TYPE>.warning` etc.) for that cluster only.
Defaults are chosen from Kafka's own limits (FACTS.md): the control-plane request queue holds 20 requests,
`queued.max.requests` defaults to 500, a controller request times out after 30 s (`controller.socket.timeout.ms`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipelines.detection.candidates import CONTROL_PLANE_QUEUE_CAPACITY
from pipelines.detection.registry import DETECTORS, DetectionConfigError, Threshold

__all__ = [
    "CONTROL_PLANE_QUEUE_CAPACITY",
    "DEFAULT_THRESHOLDS",
    "DetectionConfig",
    "DetectionConfigError",
    "Threshold",
]

# Kafka's default `queued.max.requests` (KafkaConfig.Defaults).
DEFAULT_QUEUED_MAX_REQUESTS = 500

# Every alert type's default levels, as the detector registry declares them (their units are said there).
DEFAULT_THRESHOLDS: dict[str, Threshold] = {t.value: d.threshold for t, d in DETECTORS.items()}


def _num(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DetectionConfigError(f"{where}: expected a number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class DetectionConfig:
    """Thresholds and time limits for detection. `for_cluster(name)` applies that cluster's overrides."""

    thresholds: Mapping[str, Threshold] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    # Pairing: a sent (or started) control request with no finish after this much event time is never_completed.
    # 120 s: four times the controller's 30 s request timeout, and longer than any healthy LeaderAndIsr we saw.
    never_completed_timeout_s: float = 120.0
    # Alert on a control request while it is still running (pipelines.detection.in_flight): when event time, as far
    # as its broker vouches for it (its own metric samples and log lines), passes its start plus the warning level.
    in_flight_alerts: bool = True
    # Watermark delay on silver event time: how late (out of order) an event may arrive and still count. (Live
    # scrapes stamp their samples at once while a busy file ingest reads log lines later: on an overloaded machine
    # some Handling lines arrived more than 10 s late and were dropped. 30 s kept them but held the last windows'
    # alerts until event time moved 30 s on, which a demo's last run never does.)
    watermark_delay_s: float = 10.0
    # Clock skew between controller and broker hosts tolerated when pairing by order; negative queue times
    # within this bound are clamped to 0 and flagged `clock_skew`.
    max_clock_skew_s: float = 5.0
    # Hysteresis: an alert resolves once its condition has been clear for this long (event time).
    resolve_after_s: float = 300.0
    # Sustained metric conditions are judged over event-time windows of this length.
    metric_window_s: float = 30.0
    # ... sliding by this much: a condition shorter than the window is seen whole by one of them wherever it falls
    # (5 s: the reference broker's metric interval, so consecutive windows differ by about one sample; each window
    # is state to keep, metric_window_s / metric_window_slide_s of them per series).
    metric_window_slide_s: float = 5.0
    # A window needs this many samples before a metric rule can fire (one scrape is not "sustained").
    min_samples: int = 2
    # A series sampled more sparsely than metric_window_s allows (a scrape every 30 or 60 s: operators' common
    # intervals) gets windows long enough for min_samples of its samples (pipelines.detection.metric_detectors:
    # series_window_lengths), for intervals up to this long; a series sampled more sparsely still is judged as if
    # sampled at this interval (its windows then hold one sample and no rule fires on it).
    max_scrape_interval_s: float = 60.0
    # The capacity rules (NETWORK_PROCESSOR_SATURATED, REQUEST_HANDLER_SATURATED) also need the samples to span
    # this much event time: idle ratios seen low in two samples a few seconds apart (a busy broker's burst, or a
    # young broker whose ratios cover only the seconds since it started) are not saturation.
    # 10 s: three samples of the reference broker (5 s interval), two of a 10 s scrape.
    min_span_s: float = 10.0
    # Data-plane request queue capacity (`queued.max.requests`), per cluster.
    queued_max_requests: int = DEFAULT_QUEUED_MAX_REQUESTS
    # Listener names that are the control plane (`control.plane.listener.name`); control requests seen on any
    # other listener travelled the shared data plane.
    control_plane_listeners: tuple[str, ...] = ("CONTROLLER", "CONTROL_PLANE")
    # LOCK_CONTENTION second form: share of a LeaderAndIsr's elapsed time spent waiting, and how many fetcher
    # log-start-offset/checkpoint lines on the same broker during the request make the waits "fetcher-driven".
    lock_wait_share: float = 0.5
    fetcher_burst_lines: int = 10
    # QUORUM_UNSTABLE counts the KRaft quorum's elections (a new active controller) within this much event time.
    # 10 minutes: a rolling restart of the controllers moves the leadership once or twice in that time.
    quorum_window_s: float = 600.0
    # A slow control request's alert compares it with its broker's own p90 and its peers' median of the requests of
    # the same type within this much time before it (pipelines.detection.baselines). An hour holds a few hundred
    # requests per broker on a busy cluster and is recent enough to be the same cluster.
    baseline_window_s: float = 3600.0
    # An incident's baseline counts its cause's earlier incidents on its broker and its peers within this much time
    # before it (pipelines.detection.incidents): a day shows a broker fenced every night or a flapping one.
    incident_history_s: float = 86400.0
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None) -> DetectionConfig:
        """Build from the `detection:` mapping of conf/pipeline.yaml (None or {} gives the defaults).

        Raises:
            DetectionConfigError: unknown keys or alert types, non-numeric values, warning beyond critical.
        """
        raw = dict(raw or {})
        overrides = raw.pop("clusters", None) or {}
        if not isinstance(overrides, Mapping):
            raise DetectionConfigError("detection.clusters must be a mapping of cluster name to overrides")
        cfg = cls._apply(cls(), raw, "detection")
        for name, ov in overrides.items():
            if not isinstance(ov, Mapping):
                raise DetectionConfigError(f"detection.clusters.{name} must be a mapping")
            cls._apply(cfg, ov, f"detection.clusters.{name}")  # validate now, not at first use
        return cls(**{**cfg.__dict__, "overrides": {str(k): dict(v) for k, v in overrides.items()}})

    @classmethod
    def _apply(cls, base: DetectionConfig, raw: Mapping[str, Any], where: str) -> DetectionConfig:
        values = dict(base.__dict__)
        thresholds = dict(base.thresholds)
        for key, value in raw.items():
            if key == "thresholds":
                if not isinstance(value, Mapping):
                    raise DetectionConfigError(f"{where}.thresholds must be a mapping")
                for type_, levels in value.items():
                    if type_ not in DEFAULT_THRESHOLDS:
                        raise DetectionConfigError(f"{where}.thresholds: unknown alert type {type_!r}")
                    if not isinstance(levels, Mapping) or set(levels) - {"warning", "critical"}:
                        raise DetectionConfigError(f"{where}.thresholds.{type_}: expected warning/critical")
                    old = thresholds[type_]
                    thresholds[type_] = Threshold(
                        _num(f"{where}.thresholds.{type_}.warning", levels.get("warning", old.warning)),
                        _num(f"{where}.thresholds.{type_}.critical", levels.get("critical", old.critical)),
                        old.below,
                    )
            elif key == "in_flight_alerts":
                if not isinstance(value, bool):
                    raise DetectionConfigError(f"{where}.in_flight_alerts must be true or false")
                values[key] = value
            elif key == "control_plane_listeners":
                if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                    raise DetectionConfigError(f"{where}.control_plane_listeners must be a list of names")
                values[key] = tuple(value)
            elif key in values and key not in ("thresholds", "overrides"):
                num = _num(f"{where}.{key}", value)
                if num < 0:
                    raise DetectionConfigError(f"{where}.{key} must be >= 0")
                values[key] = int(num) if isinstance(base.__dict__[key], int) else num
            else:
                raise DetectionConfigError(f"{where}: unknown key {key!r}")
        values["thresholds"] = thresholds
        return cls(**values)

    def for_cluster(self, cluster: str) -> DetectionConfig:
        """This config with `clusters.<cluster>` overrides applied (itself when there are none)."""
        ov = self.overrides.get(cluster)
        if not ov:
            return self
        return self._apply(self, copy.deepcopy(dict(ov)), f"detection.clusters.{cluster}")

    def threshold(self, alert_type: str) -> Threshold:
        return self.thresholds[alert_type]
