"""Constants of the metric parser (formats, reasons, label roles)."""

from __future__ import annotations

from schemas.routes import SOURCE_ERROR_FORMAT, SOURCE_STAGE

__all__ = [
    "LABEL_RX",
    "LISTENER_LABELS",
    "PROCESSOR_LABELS",
    "PROM_FIELDS",
    "PROM_LINE",
    "REASONS",
    "REQUEST_LABELS",
    "ROLE_LABELS",
    "SOURCE_ERROR_FORMAT",
    "SOURCE_STAGE",
    "TRIM",
]

# Prometheus text exposition: `name{l="v",...} value [timestamp_ms]`.
PROM_LINE = (
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?[ \t]+(?P<value>[^ \t]+)"
    r"(?:[ \t]+(?P<ts>-?[0-9]+))?"
)
PROM_FIELDS = ("name", "labels", "value", "ts")
# One label; values keep Prometheus' escapes (\" \\ \n) as written.
LABEL_RX = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\[\s\S])*)"'
TRIM = " \t\r"

LISTENER_LABELS = ("listener",)
REQUEST_LABELS = ("request",)
PROCESSOR_LABELS = ("processor", "networkProcessor", "networkprocessor", "network_processor")
ROLE_LABELS = (*LISTENER_LABELS, *REQUEST_LABELS, *PROCESSOR_LABELS, "quantile")

# SOURCE_ERROR_FORMAT (the `metric_format` of a record standing for a failed read of its source) and SOURCE_STAGE
# are the ingest vocabulary (schemas.routes): the scrape reader writes them too.

REASONS = {
    "blank": "blank line",
    "comment": "comment (# HELP / # TYPE)",
    "null_value": "sample without a value (null)",
    # Prometheus text writes a gauge that measures nothing as NaN (Kafka's ControlPlaneNetworkProcessorAvgIdlePercent
    # without a control plane); the JSON reporters write null: both are recognised samples without a value.
    "nan_value": "sample without a value (NaN: not measured)",
    "not_object": "JSON record is not an object",
    "bad_json": "malformed JSON",
    "no_name": "no metric name (mbean, name or metric)",
    "not_prom": "not a Prometheus exposition line",
    "dup_label": "duplicate label or tag",
    "not_number": "metric value is not a number",
    "bad_ts": "timestamp is not epoch milliseconds in range",
    # engine_metrics: one sample per series and timestamp; the batch's first is kept
    "dup_sample": "duplicate sample: its series has a sample at this timestamp earlier in the batch (kept)",
}
