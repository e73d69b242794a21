"""I/O shells of the streaming jobs: sources, the exactly-once Delta sink, Delta readers, settings, sessions.

Nothing in here transforms data; transformations live in `pipelines/`. Import the submodules directly
(`from jobs.io.delta_sink import DeltaSink`); this package imports nothing heavy on its own.
"""

from __future__ import annotations


class PipelineIOError(Exception):
    """Base class of the errors raised by jobs.io (bad settings, unreadable tables, failed commits)."""
