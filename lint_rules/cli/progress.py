"""A one-line progress bar on a terminal: throttled, with the rate and the time left."""

from __future__ import annotations

import time

TYPE_CHECKING = False  # `typing` is not imported at run time (start-up)
if TYPE_CHECKING:
    from typing import TextIO

REDRAW_INTERVAL_S = 0.1
"""At most about ten redraws a second, whatever the number of files."""

WIDTH = 24


class Progress:
    """Counts files as they finish and redraws ``stream`` at most every ``interval`` seconds.

    ``stream`` None means no progress at all (not a terminal, ``--quiet``, too few files).
    """

    def __init__(
        self, total: int, stream: TextIO | None, interval: float = REDRAW_INTERVAL_S
    ) -> None:
        self.total = total
        self.stream = stream
        self.interval = interval
        self.done = 0
        self.redraws = 0
        self._start = time.monotonic()
        self._last = float("-inf")
        self._shown = 0

    def advance(self) -> None:
        self.done += 1
        if self.stream is None:
            return
        now = time.monotonic()
        if now - self._last >= self.interval or self.done == self.total:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        assert self.stream is not None
        elapsed = max(now - self._start, 1e-6)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        filled = WIDTH * self.done // max(self.total, 1)
        line = (
            f"[{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total} files, "
            f"{rate:,.0f} files/s, ETA {left:.0f}s"
        )
        self.stream.write("\r" + line + " " * max(0, self._shown - len(line)))
        self.stream.flush()
        self._shown = len(line)
        self.redraws += 1

    def clear(self) -> None:
        """Erase the bar (before other output, and at the end); it comes back on the next draw."""
        if self.stream is not None and self._shown:
            self.stream.write("\r" + " " * self._shown + "\r")
            self.stream.flush()
            self._shown = 0
