"""`planewatch demo`: `plan` (what it runs and how it scores, pure), `processes` (its child processes: the API, the
pipeline, one scenario at a time), `watch` (the alert watcher polling the API) and `runner` (the whole loop).
"""

from __future__ import annotations

__all__: list[str] = []
