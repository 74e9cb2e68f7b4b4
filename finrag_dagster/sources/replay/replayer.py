"""The replayer: moves the clock and releases what became public, session by session."""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pandas as pd

from ...core.calendar import NY, nyse
from ..news import NewsClock
from .clock import ReleaseStats, _iso, _ts, _write_csv_upto, atomic_copy, atomic_write, last_closed_session, read_clock, to_ns
from .index import SourceIndex, cached_index, index_source
from .layout import CLOCK_FILE, RELEASE_LOG, REPLAY_DIR, UNIVERSE, ReplayError


class Replayer:
    """Releases a source raw folder into a landing folder as a replay clock moves forward.

    Parameters
    ----------
    source_raw : path
        The source raw folder (layout in the module docstring).
    landing : path
        The landing folder (created). When it holds ``_replay/clock.json`` the replay resumes
        from that clock; it must then have been filled from the same source.
    news_clock : NewsClock
        Whose news clock is trusted (as the loader reads it; default: every stamp is a date).
    index : SourceIndex, optional
        A source already read by :func:`index_source` (reused across replayers).
    """

    def __init__(self, source_raw, landing, news_clock: NewsClock = NewsClock(), index: SourceIndex | None = None):
        self.index = index or index_source(source_raw, news_clock)
        if Path(source_raw).resolve() != self.index.root or self.index.news_clock != news_clock:
            raise ReplayError("the index given was read from another source or with another news clock")
        self.landing = Path(landing).resolve()
        if self.landing == self.index.root or self.index.root in self.landing.parents:
            raise ReplayError(f"the landing folder {self.landing} must not be inside the source {self.index.root}")
        self.state_dir = self.landing / REPLAY_DIR
        self.state_dir.mkdir(parents=True, exist_ok=True)
        clock = read_clock(self.landing)
        self._now: int | None = None
        self._log_size = 0
        if clock:
            if clock.get("source") != str(self.index.root) or clock.get("news_clock") != news_clock.describe():
                raise ReplayError(
                    f"{self.landing} was filled from {clock.get('source')} (news clock {clock.get('news_clock')}); use another landing folder"
                )
            self._now = to_ns(clock["now"])
            self._log_size = int(clock.get("log_size", 0))
        self._truncate_log()
        self._repaired = False

    # ------------------------------------------------------------------ state
    @property
    def now(self) -> pd.Timestamp | None:
        """The replay clock (None before the first step)."""
        return None if self._now is None else _ts(self._now)

    @property
    def log_path(self) -> Path:
        return self.state_dir / RELEASE_LOG

    @property
    def clock_path(self) -> Path:
        return self.state_dir / CLOCK_FILE

    def _truncate_log(self) -> None:
        """Drop log lines written by a step whose clock was never saved (it will be redone)."""
        p = self.log_path
        if p.exists() and p.stat().st_size > self._log_size:
            with open(p, "r+b") as fh:
                fh.truncate(self._log_size)

    def _save_clock(self, now: int) -> None:
        counts = self.index.counts_at(now)
        lcs = last_closed_session(now)
        doc = {
            "now": _iso(now),
            "last_closed_session": lcs.isoformat() if lcs else None,
            "source": str(self.index.root),
            "news_clock": self.index.news_clock.describe(),
            "released": counts,
            "unreleasable": self.index.unreleasable,
            "log_size": self._log_size,
            "updated_at_wall_time": dt.datetime.now(dt.timezone.utc).isoformat(),
        }
        atomic_write(self.clock_path, (json.dumps(doc, indent=1) + "\n").encode("utf-8"))

    # ------------------------------------------------------------------ release
    def release_until(self, until: dt.datetime | pd.Timestamp | str) -> ReleaseStats:
        """Move the clock to ``until`` and release every item with ``since < public_time <= until``.

        A time at or before the current clock releases nothing (the clock never goes back).
        Returns the counts released by this call.
        """
        t = to_ns(until)
        prev = self._now
        if prev is not None and t <= prev:
            return ReleaseStats(since=_ts(prev), now=_ts(prev), last_closed_session=last_closed_session(prev))
        lo = -1 if prev is None else prev  # public times are > 0 for any real date
        first = not self._repaired  # first call of this replayer: check every released file
        stamp = {"released_at_replay_time": _iso(t), "released_at_wall_time": dt.datetime.now(dt.timezone.utc).isoformat()}
        written = self._release_universe() if first else 0
        # filings: the full submissions first, then the JSON that lists them
        w_filings, n_filings, log = self._release_filings(lo, t, first, stamp)
        written += w_filings + self._release_submissions(lo, t, first)
        w_rows, counts, row_log = self._release_rows(lo, t, stamp)
        written += w_rows
        self._append_log(log + row_log)
        self._now = t
        self._repaired = True
        self._save_clock(t)
        return ReleaseStats(
            since=None if prev is None else _ts(prev),
            now=_ts(t),
            news=counts["news"],
            prices=counts["prices"],
            filings=n_filings,
            files_written=written,
            last_closed_session=last_closed_session(t),
        )

    def _release_universe(self) -> int:
        """Copy the universe file into the landing folder unless it is there already (files written)."""
        ix = self.index
        if ix.universe is not None:
            dst = self.landing / UNIVERSE
            if not dst.exists() or dst.read_bytes() != ix.universe.read_bytes():
                atomic_copy(ix.universe, dst)
                return 1
        return 0

    def _release_filings(self, lo: int, t: int, first: bool, stamp: dict) -> tuple[int, int, list[tuple[int, dict]]]:
        """Copy the full submissions public in ``(lo, t]`` (on a first call, re-copy any earlier one
        missing or cut short): (files written, filings released, their log lines)."""
        ix = self.index
        written, n_filings, log = 0, 0, []
        f_lo = int(np.searchsorted(ix.filing_public, lo, side="right"))
        f_hi = int(np.searchsorted(ix.filing_public, t, side="right"))
        for k in range(0 if first else f_lo, f_hi):
            it = ix.filings[k]
            new = k >= f_lo
            for rel in it.txt:
                src, dst = ix.root / rel, self.landing / rel
                if new or not dst.exists() or dst.stat().st_size != src.stat().st_size:
                    atomic_copy(src, dst)
                    written += 1
            if new:
                n_filings += 1
                rec = {"kind": "filing", "key": it.key, "form": it.form, "ticker": it.ticker, "public_time": _iso(it.public), **stamp}
                log.append((it.public, rec))
        return written, n_filings, log

    def _release_submissions(self, lo: int, t: int, first: bool) -> int:
        """Rewrite each submissions JSON that lists filings released now (or differs): files written."""
        written = 0
        for js in self.index.submissions:
            dst = self.landing / js.rel
            if first or not dst.exists() or js.count(t) != js.count(lo):
                body = js.render(t)
                if not (dst.exists() and dst.stat().st_size == len(body) and dst.read_bytes() == body):
                    atomic_write(dst, body)
                    written += 1
        return written

    def _release_rows(self, lo: int, t: int, stamp: dict) -> tuple[int, dict[str, int], list[tuple[int, dict]]]:
        """Extend the news and price CSVs to their rows public by ``t``: (files written, rows
        released by kind, their log lines)."""
        written, counts, log = 0, {"news": 0, "prices": 0}, []
        for src in [*self.index.news, *self.index.prices]:
            a, b = src.count(lo), src.count(t)
            if _write_csv_upto(src, self.landing / src.rel, b):
                written += 1
            counts[src.kind] += b - a
            tickers = src.tickers
            for i in range(a, b):
                rec = {"kind": src.kind, "key": src.keys[i], "public_time": _iso(int(src.public[i])), **stamp}
                if tickers is not None:
                    rec["ticker"] = tickers[i]
                log.append((int(src.public[i]), rec))
        return written, counts, log

    def _append_log(self, log: list[tuple[int, dict]]) -> None:
        """Append the released items' log lines, by public time (then kind, key)."""
        if log:
            log.sort(key=lambda pr: (pr[0], pr[1]["kind"], pr[1]["key"]))
            data = "".join(json.dumps(r) + "\n" for _, r in log)
            with open(self.log_path, "ab") as fh:
                fh.write(data.encode("utf-8"))
            self._log_size = self.log_path.stat().st_size

    # ------------------------------------------------------------------ stepping
    def step_through(
        self,
        first_day: dt.date | str,
        last_day: dt.date | str,
        speed: float = 0.0,
        *,
        pre_open: dt.timedelta = dt.timedelta(minutes=30),
        intraday_every: dt.timedelta | None = dt.timedelta(hours=2),
        post_close: dt.timedelta = dt.timedelta(minutes=5),
        max_wait: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Iterator[tuple["Step", ReleaseStats]]:
        """Step the clock through the sessions ``first_day .. last_day`` and yield each step.

        The first step is ``start_of(first_day)`` (midnight New York: everything public before
        the replay window is released at once, labelled phase ``"start"``), then each session's
        :func:`session_steps`. Steps at or before the current clock are skipped (resume). With
        ``speed`` > 0 the loop waits (simulated gap / speed) wall seconds before each step,
        at most ``max_wait``; ``speed`` 0 runs as fast as it can.
        """
        if speed < 0:
            raise ReplayError("speed must be >= 0 (0: as fast as possible)")
        steps = [
            Step(start_of(first_day), _as_date(first_day), "start"),
            *session_steps(first_day, last_day, pre_open=pre_open, intraday_every=intraday_every, post_close=post_close),
        ]
        for st in steps:
            t = to_ns(st.time)
            if self._now is not None and t <= self._now:
                continue
            if speed > 0 and self._now is not None:
                wait = (t - self._now) / 1e9 / speed
                if max_wait is not None:
                    wait = min(wait, max_wait)
                if wait > 0:
                    sleep(wait)
            yield st, self.release_until(st.time)

    def run(
        self,
        first_day: dt.date | str,
        last_day: dt.date | str,
        speed: float = 0.0,
        on_session: Callable[["SessionReport"], None] | None = None,
        **step_kw,
    ) -> list["SessionReport"]:
        """:meth:`step_through` summarised per session (the ``start`` step is its own report).

        Ends once the close of the last session in ``first_day .. last_day`` is released.
        """
        reports: list[SessionReport] = []
        acc: ReleaseStats | None = None
        for st, stats in self.step_through(first_day, last_day, speed, **step_kw):
            acc = stats if acc is None else acc + stats
            if st.phase in ("start", "close"):
                rep = SessionReport(None if st.phase == "start" else st.session, acc)
                reports.append(rep)
                if on_session:
                    on_session(rep)
                acc = None
        return reports


@dataclass(frozen=True)
class Step:
    """A point the replay clock stops at: ``phase`` is start, pre_open, intraday or close."""

    time: pd.Timestamp
    session: dt.date
    phase: str


@dataclass(frozen=True)
class SessionReport:
    """What was released for a session (its pre-open, intraday and post-close steps); ``session``
    is None for the initial ``start`` step (everything public before the replay window)."""

    session: dt.date | None
    stats: ReleaseStats


def _as_date(d: dt.date | str) -> dt.date:
    if isinstance(d, dt.datetime):
        return d.date()
    if isinstance(d, dt.date):
        return d
    return dt.date.fromisoformat(str(d))


def start_of(day: dt.date | str) -> pd.Timestamp:
    """Midnight New York at the start of ``day``, in UTC: where a replay from ``day`` starts."""
    d = _as_date(day)
    return pd.Timestamp(dt.datetime(d.year, d.month, d.day), tz=NY).tz_convert("UTC")


def session_steps(
    first_day: dt.date | str,
    last_day: dt.date | str,
    *,
    pre_open: dt.timedelta = dt.timedelta(minutes=30),
    intraday_every: dt.timedelta | None = dt.timedelta(hours=2),
    post_close: dt.timedelta = dt.timedelta(minutes=5),
) -> list[Step]:
    """Clock stops for each XNYS session in ``first_day .. last_day``.

    Per session D: ``open(D) - pre_open`` (news of the night), every ``intraday_every`` after
    the open while before the close (news of the day, before the close), and ``close(D) +
    post_close`` (the bar of D and the news up to then). Raises ReplayError when the range
    holds no session.
    """
    cal = nyse()
    days = cal.sessions_in_range(_as_date(first_day), _as_date(last_day))
    if not days:
        raise ReplayError(f"no trading session between {first_day} and {last_day}")
    if post_close < dt.timedelta(0) or pre_open < dt.timedelta(0):
        raise ReplayError("pre_open and post_close must not be negative")
    out: list[Step] = []
    for d in days:
        op, cl = cal.open_time(d), cal.close_time(d)
        out.append(Step(op - pre_open, d, "pre_open"))
        if intraday_every and intraday_every > dt.timedelta(0):
            t = op + intraday_every
            while t < cl:
                out.append(Step(t, d, "intraday"))
                t += intraday_every
        out.append(Step(cl + post_close, d, "close"))
    return out


def release_until(source_raw, landing, until: dt.datetime | pd.Timestamp | str, news_clock: NewsClock = NewsClock()) -> ReleaseStats:
    """Release into ``landing`` every item of ``source_raw`` public at or before ``until``.

    Resumes from ``<landing>/_replay/clock.json`` (items released by earlier calls are not
    released again). ``until`` must carry a time zone.
    """
    ix = cached_index(source_raw, news_clock)
    return Replayer(source_raw, landing, news_clock=news_clock, index=ix).release_until(until)
