"""One module per CLI command: `configure(parser)` and `run(args) -> int`.

`pipeline`, `api`, `sql`, `roll_check`, `roll`, `parse` (the analytics); `broker`, `cluster`, `control`, `scenario` (the
reference broker); `demo` (everything together).
"""

from __future__ import annotations

__all__: list[str] = []
