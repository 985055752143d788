"""How much a command prints: ``--quiet``, the default, ``--verbose``."""

from __future__ import annotations

#: Errors and the final result lines only.
QUIET = 0
#: Stage lines, a progress bar on a terminal (one line per cell elsewhere).
NORMAL = 1
#: Also every stage time, every cell and the package's INFO log messages.
VERBOSE = 2
