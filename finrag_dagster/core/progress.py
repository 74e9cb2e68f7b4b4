"""Progress on the long stages: a tqdm bar with ETA on a terminal (the CLI), and a line every
``every`` items to a logger (Dagster's run log in the UI), so no stage is silent for minutes."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator

from tqdm import tqdm


def _fmt_s(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def progress_line(desc: str, done: int, total: int, elapsed: float, unit: str) -> str:
    """'evidence: 40/250 days (16%), 3.1 days/s, ETA 1m08s'."""
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else float("nan")
    pct = 100 * done / total if total else 100.0
    eta_s = _fmt_s(eta) if eta == eta else "?"
    return f"{desc}: {done}/{total} {unit} ({pct:.0f}%), {rate:.2f} {unit}/s, ETA {eta_s}"


class Progress:
    """``update()`` after each item; ``close()`` at the end (or use as a context manager)."""

    def __init__(
        self,
        total: int,
        desc: str,
        log: Callable[[str], None] | None = None,
        every: int = 20,
        unit: str = "days",
        clock: Callable[[], float] = time.monotonic,
    ):
        self.total, self.desc, self.log, self.every, self.unit, self.clock = total, desc, log, max(1, every), unit, clock
        self.done = 0
        self.t0 = clock()
        self.bar = tqdm(
            total=total,
            desc=desc,
            unit=unit.rstrip("s") or "it",
            leave=False,
            mininterval=1,
            disable=total < 2 or not sys.stderr.isatty(),
            file=sys.stderr,
        )

    def update(self, n: int = 1) -> None:
        self.done += n
        self.bar.update(n)
        if self.log is not None and (self.done % self.every == 0 or self.done == self.total) and self.done < self.total:
            self.log(progress_line(self.desc, self.done, self.total, self.clock() - self.t0, self.unit))

    def close(self) -> None:
        self.bar.close()
        if self.log is not None and self.total >= self.every:
            self.log(progress_line(self.desc, self.done, self.total, self.clock() - self.t0, self.unit) + " (done)")

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> bool:
        self.close()
        return False


def track(items: Iterable, total: int, desc: str, log: Callable[[str], None] | None = None, every: int = 20, unit: str = "days") -> Iterator:
    """Yield the items with a :class:`Progress`."""
    with Progress(total, desc, log, every, unit) as p:
        for x in items:
            yield x
            p.update()
