"""Incident scenarios on the reference cluster (``planewatch scenario NAME --dir DIR``); see :mod:`.library`."""

from __future__ import annotations
