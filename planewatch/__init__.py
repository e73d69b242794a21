"""planewatch: the CLI that wires the reference broker (broker/) and the analytics (jobs/, pipelines/, api/).

The two halves share no code; only this package and the demo import both.
"""

from __future__ import annotations

__all__ = ["__version__"]
__version__ = "0.1.0"
