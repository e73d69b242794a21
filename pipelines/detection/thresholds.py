"""A rule's warning and critical levels (:class:`Threshold`), the configuration's error, and the Kafka limits the
levels are fractions of: below the detector registry (which declares each alert type's default levels) and the
configuration (which reads them), so neither imports the other's dependents."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CONTROL_PLANE_QUEUE_CAPACITY", "DEFAULT_QUEUED_MAX_REQUESTS", "DetectionConfigError", "Threshold"]

# Kafka hard-codes the control-plane RequestChannel capacity (SocketServer.scala, KIP-291).
CONTROL_PLANE_QUEUE_CAPACITY = 20
# Kafka's default `queued.max.requests` (KafkaConfig.Defaults).
DEFAULT_QUEUED_MAX_REQUESTS = 500


class DetectionConfigError(ValueError):
    """The `detection:` configuration is invalid (unknown alert type, bad number, warning beyond critical)."""


@dataclass(frozen=True)
class Threshold:
    """Warning and critical levels of one rule. `below=True`: the rule fires when the value falls under them."""

    warning: float
    critical: float
    below: bool = False

    def __post_init__(self) -> None:
        if self.below and self.critical > self.warning:
            raise DetectionConfigError(f"below-threshold: critical {self.critical} must be <= warning {self.warning}")
        if not self.below and self.critical < self.warning:
            raise DetectionConfigError(f"critical {self.critical} must be >= warning {self.warning}")

    def severity(self, value: float) -> str | None:
        """'critical', 'warning' or None for a measured value."""
        if self.below:
            return "critical" if value <= self.critical else "warning" if value < self.warning else None
        return "critical" if value >= self.critical else "warning" if value >= self.warning else None
