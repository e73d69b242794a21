"""The log's server.log identity and its log-start-offset line, per Kafka era (FACTS.md section 6).

=========  =====================  ====================================================  ===========================
version    logger                 logIdent                                              log start offset line
=========  =====================  ====================================================  ===========================
``1.0``    kafka.log.Log          (none)                                                ``Incrementing log start
                                                                                        offset of partition T to N
                                                                                        in dir D``
``1.1``    kafka.log.Log          ``[Log partition=T, dir=D] ``                          ``Incrementing log start
           (1.1 - 2.5)                                                                  offset to N``
``2.6``    kafka.log.Log          ``[Log partition=T, dir=D] ``                          ``Incremented log start
           (2.6 - 3.4, default)                                                         offset to N due to R``
``3.5``    kafka.log.UnifiedLog   ``[UnifiedLog partition=T, dir=D] ``                   as 2.6
=========  =====================  ====================================================  ===========================
"""

from __future__ import annotations

from broker.config_table import LINE_VERSIONS

__all__ = ["DEFAULT_LINE_VERSION", "LINE_VERSIONS", "log_identity", "log_start_offset_line"]

DEFAULT_LINE_VERSION = "2.6"


def _check(version: str) -> None:
    if version not in LINE_VERSIONS:
        raise ValueError(f"Unknown Kafka log line version {version!r}; expected one of {', '.join(LINE_VERSIONS)}")


def log_identity(version: str, topic_partition: str, parent: str) -> tuple[str, str]:
    """``(logger name, logIdent)`` of a partition log in Kafka ``version``.

    Raises:
        ValueError: an unknown version.
    """
    _check(version)
    if version == "1.0":
        return "kafka.log.Log", ""
    if version == "3.5":
        return "kafka.log.UnifiedLog", f"[UnifiedLog partition={topic_partition}, dir={parent}] "
    return "kafka.log.Log", f"[Log partition={topic_partition}, dir={parent}] "


def log_start_offset_line(version: str, topic_partition: str, parent: str, new_offset: int, reason: str) -> str:
    """The message (after the logIdent) written when the log start offset moves."""
    _check(version)
    if version == "1.0":
        return f"Incrementing log start offset of partition {topic_partition} to {new_offset} in dir {parent}"
    if version == "1.1":
        return f"Incrementing log start offset to {new_offset}"
    return f"Incremented log start offset to {new_offset} due to {reason}"
