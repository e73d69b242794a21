"""Incident scenarios on the reference cluster (``planewatch scenario NAME --dir DIR``); see :mod:`.library`.

Modules: `base` (What every scenario shares); `expected` (What each scenario run injects and which alert must catch
it (pure data).
"""

from __future__ import annotations

__all__: list[str] = []
