"""How long this process has been running (the interpreter's start and imports included)."""

from __future__ import annotations

import os
import time


def seconds_since_process_start() -> float:
    """Seconds since this process started, from the kernel's record of its start (Linux);
    ``0.0`` where that record cannot be read, so callers time from their own start instead.
    """
    try:
        with open(f"/proc/{os.getpid()}/stat", encoding="ascii") as fh:
            stat = fh.read()
        # fields after the command name, which is in parentheses and may hold spaces
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])
        started = start_ticks / os.sysconf("SC_CLK_TCK")
        return max(time.clock_gettime(time.CLOCK_BOOTTIME) - started, 0.0)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0
