"""The API version ranges of Kafka releases: what a broker of that release advertises in ApiVersions.

Clients infer the broker's Kafka version from ApiVersions (kafka-python's ``check_version`` and aiokafka look for
the newest API version each release introduced; librdkafka enables features by range), so a broker that claims one
release in its logs must advertise that release's ranges, not the union of whatever its codec implements.
:data:`KAFKA_RELEASES` holds, per release, the ranges a ZooKeeper-mode Kafka broker of that release answered
(asked of Apache Kafka 2.8.2 and 3.9.1 with ApiVersions v3, ``planewatch cluster --kafka``). A new API is added to
every release that has it; the codec (:data:`broker.protocol.SUPPORTED`) and the registered handlers decide what
is advertised of it (:func:`advertised_ranges`).

The broker setting ``inter.broker.protocol.version`` names the release (Kafka's own key; in Kafka it pins the
inter-broker protocol, here it also pins the client-facing ranges). A release is *speakable* when the codec
implements every version it advertises of every API the codec knows: only such a release may be configured, so a
client never infers a different Kafka than the one the broker claims to be (:func:`check_release`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .api_keys import API_NAMES
from .messages import SUPPORTED

__all__ = ["DEFAULT_RELEASE", "KAFKA_RELEASES", "advertised_ranges", "check_release", "release_of",
           "speakable_releases", "unspeakable_apis"]

# Kafka 2.8.2 (ZooKeeper mode), ApiVersions v3: api_key -> (min, max).
_KAFKA_2_8: dict[int, tuple[int, int]] = {
    0: (0, 9), 1: (0, 12), 2: (0, 6), 3: (0, 11), 4: (0, 5), 5: (0, 3), 6: (0, 7), 7: (0, 3), 8: (0, 8), 9: (0, 7),
    10: (0, 3), 11: (0, 7), 12: (0, 4), 13: (0, 4), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3),
    19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1),
    28: (0, 3), 29: (0, 2), 30: (0, 2), 31: (0, 2), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 2), 36: (0, 2),
    37: (0, 3), 38: (0, 2), 39: (0, 2), 40: (0, 2), 41: (0, 2), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
    46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 56: (0, 0), 57: (0, 0), 60: (0, 0),
    61: (0, 0),
}

# Kafka 3.9.1 (ZooKeeper mode), ApiVersions v3.
_KAFKA_3_9: dict[int, tuple[int, int]] = {
    0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3), 8: (0, 9), 9: (0, 9),
    10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4),
    19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 1),
    28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2),
    37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
    46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 56: (0, 3), 57: (0, 1), 58: (0, 0),
    60: (0, 1), 61: (0, 0), 65: (0, 0), 66: (0, 1), 67: (0, 0), 68: (0, 0), 69: (0, 0),
}

#: release ("major.minor") -> api_key -> (min, max) advertised by a broker of that release.
KAFKA_RELEASES: dict[str, Mapping[int, tuple[int, int]]] = {"2.8": _KAFKA_2_8, "3.9": _KAFKA_3_9}

#: The release the broker's logs imitate (state-change.log and kafka-request.log are Kafka 2.8's).
DEFAULT_RELEASE = "2.8"

# Kafka's version strings: "2.8", "2.8-IV1" (an inter-broker protocol step), "2.8.2" (a patch release).
_VERSION_RE = re.compile(r"(\d+\.\d+)(?:-IV\d+|\.\d+)?")


def release_of(version: str) -> str:
    """The release ("major.minor") an ``inter.broker.protocol.version`` value names.

    Raises:
        ValueError: not a Kafka version string.
    """
    m = _VERSION_RE.fullmatch(version.strip())
    if m is None:
        raise ValueError(f"{version!r} is not a Kafka version (expected e.g. 2.8, 2.8-IV1 or 2.8.2)")
    return m.group(1)


def unspeakable_apis(release: str) -> list[str]:
    """``Name (max)`` of every API whose ``release`` maximum the codec does not implement (empty: speakable)."""
    table = KAFKA_RELEASES[release]
    return [f"{API_NAMES.get(k, str(k))} (v{hi}, codec v{SUPPORTED[k][1]})" for k, (_lo, hi) in sorted(table.items())
            if k in SUPPORTED and hi > SUPPORTED[k][1]]


def speakable_releases() -> list[str]:
    """The releases whose every advertised version the codec implements."""
    return [r for r in KAFKA_RELEASES if not unspeakable_apis(r)]


def check_release(version: str) -> str:
    """The release of ``version`` when the broker can advertise it truthfully.

    Raises:
        ValueError: not a version, a release with no table, or one the codec cannot speak (the message says why).
    """
    release = release_of(version)
    if release not in KAFKA_RELEASES:
        raise ValueError(f"no API version table for Kafka {release}; known: {', '.join(KAFKA_RELEASES)}")
    missing = unspeakable_apis(release)
    if missing:
        raise ValueError(f"the reference broker's codec does not implement Kafka {release}'s versions of "
                         f"{', '.join(missing)}: a client would infer an older Kafka; speakable: "
                         f"{', '.join(speakable_releases())}")
    return release


def advertised_ranges(release: str | None, handled: Iterable[int]) -> dict[int, tuple[int, int]]:
    """api_key -> (min, max) to advertise for the ``handled`` APIs: the release's range cut to what the codec
    implements (an API the release lacks is not advertised); with ``release`` None, the codec's ranges."""
    out: dict[int, tuple[int, int]] = {}
    table = KAFKA_RELEASES[release] if release is not None else None
    for k in handled:
        if k not in SUPPORTED:
            continue
        lo, hi = SUPPORTED[k]
        if table is not None:
            if k not in table:
                continue
            lo, hi = max(lo, table[k][0]), min(hi, table[k][1])
        if lo <= hi:
            out[k] = (lo, hi)
    return out
