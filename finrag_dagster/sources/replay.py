"""Replay a files-mode raw folder day by day into a *landing folder*, in the same real formats.

A replay clock moves forward in steps; each step releases into the landing folder every news row,
price bar and filing whose public time is at or before the clock (``public_time <= now``) and was
not released yet, with public times derived as the FNSPID, price and EDGAR loaders derive them.
Items without a readable time are never released. Every file is written atomically, and the landing
content is a function of the clock alone, so a replay interrupted and resumed writes the same bytes;
a new :class:`Replayer` resumes from ``<landing>/_replay/clock.json``. Layout, release rules and the
bookkeeping files: docs/replay.md (design notes: "`sources/replay.py`: design notes").
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pandas as pd
import polars as pl
import tomli_w

from ..core.calendar import NY, date_only_public_ns, nyse
from ..core.storage.atomic import PLAIN, atomic_file
from .base import SourceError
from .edgar import read_full_submission, read_submissions_json
from .fnspid import NewsClock, news_public_ns, read_news_file
from .prices import read_price_csv

# ----------------------------------------------------------------------------- layout
UNIVERSE = "universe/tickers.csv"
NEWS_GLOB = "news/*.csv"
PRICES_GLOB = "prices/*.csv"
SUBMISSIONS_GLOB = "sec/submissions/*.json"
FILINGS_DIR = "sec/sec-edgar-filings"
FULL_SUBMISSION = "full-submission.txt"
REPLAY_DIR = "_replay"
CLOCK_FILE = "clock.json"
RELEASE_LOG = "releases.jsonl"
SETTINGS_FILE = "settings.toml"

NEVER = np.iinfo(np.int64).max  # public time of an item without a readable time: never released
_DAY_NS = 86_400 * 10**9


class ReplayError(ValueError):
    """The replay cannot go on as asked (wrong source for this landing folder, bad dates...)."""


# ============================================================================ public times
def price_public_ns(date_raw: pl.Series) -> np.ndarray:
    """Public time (int64 UTC ns) of price bars from their raw date strings.

    The date is parsed as the price loader does (first 10 characters, ``%Y-%m-%d``). A bar of a
    session D exists once close(D) has passed (early closes included); a bar dated on a day that
    is not a session (the loader quarantines it) at 23:59:59 New York of that day; :data:`NEVER`
    when the date is unreadable.
    """
    if len(date_raw) == 0:
        return np.zeros(0, dtype=np.int64)
    dates = pl.DataFrame({"d": date_raw.cast(pl.Utf8)}).select(pl.col("d").str.strip_chars().str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False))[
        "d"
    ]
    valid = ~dates.is_null().to_numpy()
    days = dates.to_numpy().astype("datetime64[D]")
    cal = nyse()
    out = np.full(len(days), NEVER, dtype=np.int64)
    if not valid.any():
        return out
    vd = days[valid]
    pos = np.clip(np.searchsorted(cal.sessions, vd), 0, len(cal.sessions) - 1)
    is_session = cal.sessions[pos] == vd
    pub = np.where(is_session, cal.closes_ns[pos], date_only_public_ns(vd))
    out[valid] = pub
    return out


# ============================================================================ source index
def split_csv_records(data: bytes) -> list[bytes]:
    """The records of a CSV file as raw bytes, line terminators included.

    A record ends at a newline outside double quotes (quoted fields may span lines). A last
    record without a terminator gets the file's terminator (that of the first record).
    """
    parts = data.split(b"\n")
    records: list[bytes] = []
    cur: list[bytes] = []
    quotes = 0
    last = len(parts) - 1
    for i, p in enumerate(parts):
        piece = p if i == last else p + b"\n"
        if not piece:
            continue
        cur.append(piece)
        quotes += p.count(b'"')
        if quotes % 2 == 0:
            records.append(b"".join(cur))
            cur, quotes = [], 0
    if cur:
        records.append(b"".join(cur))
    if records and not records[-1].endswith(b"\n"):
        term = b"\r\n" if records[0].endswith(b"\r\n") else b"\n"
        records[-1] += term
    return records


def _blank(rec: bytes) -> bool:
    return not rec.strip()


@dataclass
class CsvSource:
    """One source CSV: header bytes and data records in release order (public time, source row)."""

    rel: str
    kind: str  # "news" | "prices"
    header: bytes
    records: list[bytes]  # release order
    public: np.ndarray  # int64, ascending (release order)
    rows: np.ndarray  # source data row of each record (release order)
    keys: list[str]  # release order: what the release log calls the item
    tickers: list[str] | None = None  # news: Stock_symbol of each record (release order)
    cum: np.ndarray = field(init=False)  # byte size of the file holding the first k records

    def __post_init__(self) -> None:
        sizes = np.fromiter((len(r) for r in self.records), dtype=np.int64, count=len(self.records))
        self.cum = np.concatenate([[len(self.header)], len(self.header) + np.cumsum(sizes)]).astype(np.int64)

    def count(self, t_ns: int) -> int:
        """Records released at clock ``t_ns`` (public time <= t)."""
        return int(np.searchsorted(self.public, t_ns, side="right"))


def _csv_source(rel: str, kind: str, header: bytes, public: np.ndarray, keys: list[str], data_records: list[bytes]) -> CsvSource:
    order = np.lexsort((np.arange(len(public)), public))
    return CsvSource(
        rel=rel,
        kind=kind,
        header=header,
        records=[data_records[i] for i in order],
        public=public[order].astype(np.int64),
        rows=order.astype(np.int64),
        keys=[keys[i] for i in order],
    )


def _news_source(path: Path, rel: str, clock: NewsClock) -> CsvSource:
    frame = read_news_file(path)
    records = split_csv_records(path.read_bytes())
    if not records:
        raise SourceError(f"{rel}: empty news file (no header)")
    body = records[1:]  # polars keeps a blank line as an all-null row...
    if len(body) != frame.height:  # ...except where it does not (e.g. blank lines at the end)
        body = [r for r in body if not _blank(r)]
    if len(body) != frame.height:
        raise SourceError(f"{rel}: {len(body)} CSV records but the news reader sees {frame.height} rows; cannot replay this file row by row")
    public, _ = news_public_ns(frame, clock)
    keys = [f"{rel}#{i}" for i in range(frame.height)]
    src = _csv_source(rel, "news", records[0], public, keys, body)
    symbols = frame["Stock_symbol"].to_list()
    src.tickers = [symbols[int(i)] for i in src.rows]
    return src


def _price_source(path: Path, rel: str) -> CsvSource:
    frame = read_price_csv(path)
    records = split_csv_records(path.read_bytes())
    header_n = len(records) - frame.height
    if header_n < 1:
        raise SourceError(f"{rel}: cannot tell the header rows from the data rows")
    public = price_public_ns(frame["date_raw"])
    dates = frame["date_raw"].fill_null("").str.strip_chars().str.slice(0, 10).to_list()
    keys = [f"{t}:{d}" for t, d in zip(frame["ticker"].to_list(), dates)]
    return _csv_source(rel, "prices", b"".join(records[:header_n]), public, keys, records[header_n:])


@dataclass
class JsonSource:
    """One submissions JSON: the document, where its filing arrays are, and each entry's release time."""

    rel: str
    doc: dict
    block_path: tuple[str, ...]  # ("filings", "recent") or () for an overflow page
    n: int
    public: np.ndarray  # per entry (source order), set once filings are grouped
    style: dict  # json.dumps keyword arguments that reproduce the source's layout
    style_tail: bytes = b""  # what followed the JSON text in the source (a final newline)

    def count(self, t_ns: int) -> int:
        return int((self.public <= t_ns).sum())

    def render(self, t_ns: int) -> bytes:
        keep = np.flatnonzero(self.public <= t_ns).tolist()
        doc = json.loads(json.dumps(self.doc))  # deep copy, same key order
        block = doc
        for k in self.block_path:
            block = block[k]
        for key, value in list(block.items()):
            if isinstance(value, list) and len(value) == self.n:
                block[key] = [value[i] for i in keep]
        return json.dumps(doc, **self.style).encode("utf-8") + self.style_tail


def _json_source(path: Path, rel: str) -> JsonSource:
    try:
        raw = path.read_text(encoding="utf-8")
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SourceError(f"{rel}: not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise SourceError(f"{rel}: not an SEC submissions JSON")
    if isinstance(doc.get("filings"), dict) and isinstance(doc["filings"].get("recent"), dict):
        block_path: tuple[str, ...] = ("filings", "recent")
        block = doc["filings"]["recent"]
    elif "accessionNumber" in doc:
        block_path, block = (), doc
    else:
        raise SourceError(f"{rel}: not an SEC submissions JSON (no filings.recent.accessionNumber)")
    n = len(block.get("accessionNumber") or [])
    style: dict = {}
    body = raw.rstrip("\r\n")
    tail = raw[len(body) :].encode("utf-8")
    for cand in ({}, {"separators": (",", ":")}, {"indent": 1}, {"indent": 2}):
        if json.dumps(doc, **cand) == body:
            style = cand
            break
    return JsonSource(rel=rel, doc=doc, block_path=block_path, n=n, public=np.full(n, NEVER, dtype=np.int64), style=style, style_tail=tail)


@dataclass
class FilingItem:
    """One filing (an accession, or a source record without one) and the files that carry it."""

    key: str
    public: int
    txt: list[str]  # full-submission.txt paths (relative)
    entries: list[tuple[str, int]]  # (submissions JSON rel path, index in its arrays)
    form: str | None
    ticker: str | None


@dataclass
class SourceIndex:
    """Everything the replay needs to know about a source raw folder, read once."""

    root: Path
    news_clock: NewsClock
    universe: Path | None
    news: list[CsvSource]
    prices: list[CsvSource]
    submissions: list[JsonSource]
    filings: list[FilingItem]  # sorted by (public, key)
    filing_public: np.ndarray  # ascending, aligned with filings
    unreleasable: dict[str, int]

    def counts_at(self, t_ns: int | None) -> dict[str, int]:
        """Items released at clock ``t_ns`` (None: before the first step), by kind."""
        if t_ns is None:
            return {"news": 0, "prices": 0, "filings": 0}
        return {
            "news": sum(s.count(t_ns) for s in self.news),
            "prices": sum(s.count(t_ns) for s in self.prices),
            "filings": int(np.searchsorted(self.filing_public, t_ns, side="right")),
        }


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def _files(root: Path, pattern: str) -> list[Path]:
    return sorted((Path(p) for p in glob.glob(str(root / pattern)) if Path(p).is_file()), key=str)


def index_source(source_raw: str | os.PathLike, news_clock: NewsClock = NewsClock()) -> SourceIndex:
    """Read a source raw folder once: every item, its public time and where it goes.

    Raises
    ------
    SourceError
        When the folder has no ``universe/tickers.csv`` and no news, price or filing file, or a
        file cannot be read.
    """
    root = Path(source_raw).resolve()
    if not root.is_dir():
        raise SourceError(f"source folder {root} does not exist")
    universe = root / UNIVERSE
    news = [_news_source(p, _rel(p, root), news_clock) for p in _files(root, NEWS_GLOB)]
    prices = [_price_source(p, _rel(p, root)) for p in _files(root, PRICES_GLOB)]
    subs = [_json_source(p, _rel(p, root)) for p in _files(root, SUBMISSIONS_GLOB)]
    txts = sorted((root / FILINGS_DIR).rglob(FULL_SUBMISSION), key=str) if (root / FILINGS_DIR).is_dir() else []
    if not universe.is_file() and not (news or prices or subs or txts):
        raise SourceError(
            f"{root} does not look like a raw folder (expected {UNIVERSE}, {NEWS_GLOB}, {PRICES_GLOB}, {SUBMISSIONS_GLOB} or {FILINGS_DIR}/...)"
        )

    # filings: group every source record by accession, as load_filings merges them
    groups: dict[str, dict] = {}
    loose: list[FilingItem] = []
    for js in subs:
        for r in read_submissions_json(root / js.rel, 0):
            t = r.accepted_ns
            if r.accession is None:
                loose.append(
                    FilingItem(f"{js.rel}#{r.source_row}", NEVER if t is None else int(t), [], [(js.rel, r.source_row)], r.form_type, r.ticker)
                )
                continue
            g = groups.setdefault(r.accession, {"times": [], "txt": [], "entries": [], "form": None, "ticker": None})
            g["entries"].append((js.rel, r.source_row))
            g["form"] = g["form"] or r.form_type
            g["ticker"] = g["ticker"] or r.ticker
            if t is not None:
                g["times"].append(int(t))
    for p in txts:
        rel = _rel(p, root)
        (r,) = read_full_submission(p, 0, with_text=False)
        t = r.accepted_ns
        if r.accession is None:
            loose.append(FilingItem(rel, NEVER if t is None else int(t), [rel], [], r.form_type, r.ticker))
            continue
        g = groups.setdefault(r.accession, {"times": [], "txt": [], "entries": [], "form": None, "ticker": None})
        g["txt"].append(rel)
        g["form"] = r.form_type or g["form"]
        g["ticker"] = r.ticker or g["ticker"]
        if t is not None:
            g["times"].append(int(t))
    items = [
        FilingItem(acc, max(g["times"]) if g["times"] else NEVER, g["txt"], g["entries"], g["form"], g["ticker"]) for acc, g in groups.items()
    ] + loose
    items.sort(key=lambda it: (it.public, it.key))
    by_rel = {js.rel: js for js in subs}
    for it in items:
        for rel, i in it.entries:
            by_rel[rel].public[i] = it.public

    unreleasable = {
        "news": int(sum((s.public == NEVER).sum() for s in news)),
        "prices": int(sum((s.public == NEVER).sum() for s in prices)),
        "filings": sum(1 for it in items if it.public == NEVER),
    }
    return SourceIndex(
        root=root,
        news_clock=news_clock,
        universe=universe if universe.is_file() else None,
        news=news,
        prices=prices,
        submissions=subs,
        filings=items,
        filing_public=np.array([it.public for it in items], dtype=np.int64),
        unreleasable=unreleasable,
    )


# ============================================================================ writing
def atomic_write(path: Path, data: bytes, base: Path | None = None) -> None:
    """Write ``path`` atomically; with ``base``, the new file is a copy of ``base`` with ``data`` appended."""
    with atomic_file(path, mode=PLAIN) as out:
        if base is not None:
            with open(base, "rb") as src:
                shutil.copyfileobj(src, out, 1 << 20)
        out.write(data)


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` atomically (temporary file + ``os.replace``)."""
    atomic_write(dst, b"", base=src)


def _write_csv_upto(src: CsvSource, path: Path, k: int) -> bool:
    """Make the landing CSV hold the header and the first ``k`` records; True if it was written.

    When the file already holds the first j <= k records (recognised by its size), only the new
    records are appended (to a copy, then moved into place); otherwise it is rebuilt.
    """
    j = None
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = None
    if size is not None:
        pos = int(np.searchsorted(src.cum, size))
        if pos < len(src.cum) and src.cum[pos] == size:
            j = pos
    if j == k:
        return False
    if j is not None and j < k:
        atomic_write(path, b"".join(src.records[j:k]), base=path)
    else:
        atomic_write(path, src.header + b"".join(src.records[:k]))
    return True


# ============================================================================ clock, log, stats
def _ts(ns: int) -> pd.Timestamp:
    return pd.Timestamp(int(ns), tz="UTC")


def _iso(ns: int) -> str:
    return _ts(ns).isoformat()


def to_ns(t: dt.datetime | pd.Timestamp | str) -> int:
    """A tz-aware time (or an ISO string with offset) as int64 UTC ns; naive times are refused."""
    ts = pd.Timestamp(t)
    if ts.tzinfo is None:
        raise ReplayError(f"naive time {t!r}: give the replay clock a time zone (UTC)")
    return int(ts.tz_convert("UTC").value)


def last_closed_session(t_ns: int) -> dt.date | None:
    """The last XNYS session whose close is at or before ``t_ns`` (None before the calendar)."""
    cal = nyse()
    i = int(np.searchsorted(cal.closes_ns, t_ns, side="right")) - 1
    return cal.sessions[i].item() if i >= 0 else None


def read_clock(landing: str | os.PathLike) -> dict | None:
    """``<landing>/_replay/clock.json`` as a dict, or None when the folder was never replayed into."""
    p = Path(landing) / REPLAY_DIR / CLOCK_FILE
    if not p.is_file():
        return None
    return json.loads(p.read_text(encoding="utf-8"))


def replay_now(settings) -> pd.Timestamp | None:
    """The replay clock of the landing folder a files-mode ``Settings`` reads, or None.

    The landing folder is the one holding the settings' universe file (``<landing>/universe/
    tickers.csv``). Sensors that ask "what time is it" can use this instead of the wall clock.
    """
    src = getattr(settings, "sources", None)
    if src is None or src.kind != "files" or not src.universe:
        return None
    clock = read_clock(Path(src.universe).parent.parent)
    return pd.Timestamp(clock["now"]).tz_convert("UTC") if clock else None


@dataclass
class ReleaseStats:
    """What one :meth:`Replayer.release_until` call released."""

    since: pd.Timestamp | None  # the clock before the call (None: first step on this landing)
    now: pd.Timestamp  # the clock after it
    news: int = 0
    prices: int = 0
    filings: int = 0
    files_written: int = 0
    last_closed_session: dt.date | None = None

    @property
    def total(self) -> int:
        return self.news + self.prices + self.filings

    def __add__(self, other: "ReleaseStats") -> "ReleaseStats":
        return ReleaseStats(
            since=self.since if self.since is not None else other.since,
            now=other.now,
            news=self.news + other.news,
            prices=self.prices + other.prices,
            filings=self.filings + other.filings,
            files_written=self.files_written + other.files_written,
            last_closed_session=other.last_closed_session,
        )


# ============================================================================ the replayer
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


# ============================================================================ module-level API
_INDEX_CACHE: dict[tuple[str, bool], tuple[tuple, SourceIndex]] = {}


def _fingerprint(root: Path) -> tuple:
    n, size, mtime = 0, 0, 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            st = os.stat(os.path.join(dirpath, f))
            n, size, mtime = n + 1, size + st.st_size, max(mtime, st.st_mtime_ns)
    return n, size, mtime


def cached_index(source_raw, news_clock: NewsClock = NewsClock()) -> SourceIndex:
    """:func:`index_source`, kept in memory while the source folder is unchanged."""
    root = Path(source_raw).resolve()
    key = (str(root), news_clock)
    fp = _fingerprint(root)
    hit = _INDEX_CACHE.get(key)
    if hit and hit[0] == fp:
        return hit[1]
    ix = index_source(root, news_clock)
    _INDEX_CACHE.clear()
    _INDEX_CACHE[key] = (fp, ix)
    return ix


def release_until(source_raw, landing, until: dt.datetime | pd.Timestamp | str, news_clock: NewsClock = NewsClock()) -> ReleaseStats:
    """Release into ``landing`` every item of ``source_raw`` public at or before ``until``.

    Resumes from ``<landing>/_replay/clock.json`` (items released by earlier calls are not
    released again). ``until`` must carry a time zone.
    """
    ix = cached_index(source_raw, news_clock)
    return Replayer(source_raw, landing, news_clock=news_clock, index=ix).release_until(until)


# ============================================================================ settings snippet
SNIPPET_HEADER = (
    "# finrag settings over a replay landing folder (written by `finrag replay`).\n"
    "# Use it with FINRAG_CONFIG=<this file>; lake_dir is where the pipeline writes.\n"
)


def _changed_sections(cur: dict, default: dict) -> dict:
    """The sections of ``cur`` (less lake, world, sources, calendar) with their non-default, set values."""
    out = {}
    for section, values in cur.items():
        if section in ("lake_dir", "world", "sources", "calendar") or not isinstance(values, dict):
            continue
        changed = {k: v for k, v in values.items() if v != default[section].get(k) and v is not None}
        if changed:
            out[section] = changed
    return out


def files_settings_toml(
    landing, lake_dir, base=None, *, first_day=None, last_day=None, market_ticker: str | None = None, news_clock: NewsClock = NewsClock()
) -> str:
    """A settings TOML that points finrag (files mode) at a landing folder.

    Parameters
    ----------
    landing, lake_dir : path
        The landing folder the sources are read from, and the lake the pipeline writes.
    base : Settings, optional
        Settings whose non-default sections (splits, variants, reader, ...) are carried over.
    first_day, last_day : date, optional
        ``calendar.decision_start`` and ``calendar.end`` (the replay window).
    market_ticker : str, optional
        Default: the base settings' market proxy.
    """
    from ..core.settings import Settings

    landing = Path(landing).resolve()
    base = base or Settings()
    default = Settings().model_dump()
    cur = base.model_dump()
    if market_ticker is None:
        market_ticker = base.market_ticker
    cal = dict(cur["calendar"])
    if first_day is not None:
        d0 = _as_date(first_day)
        cal["decision_start"] = d0
        cal["start"] = min(cal["start"], d0)
    if last_day is not None:
        cal["end"] = _as_date(last_day)
    sources = {
        "kind": "files",
        "universe": str(landing / UNIVERSE),
        "news": [str(landing / NEWS_GLOB)],
        "prices": [str(landing / PRICES_GLOB)],
        "filings_index": [str(landing / SUBMISSIONS_GLOB), str(landing / FILINGS_DIR)],
        "filings_text": [str(landing / FILINGS_DIR)],
        "market_ticker": market_ticker,
        "news_dates_only": news_clock.dates_only,
        "news_trusted_publishers": list(news_clock.trusted_publishers),
        "news_trusted_files": list(news_clock.trusted_files),
    }
    doc = {"lake_dir": str(Path(lake_dir).resolve()), "sources": sources, "calendar": cal, **_changed_sections(cur, default)}
    return SNIPPET_HEADER + tomli_w.dumps(doc)


def write_settings_snippet(landing, lake_dir, base=None, **kw) -> Path:
    """Write :func:`files_settings_toml` to ``<landing>/_replay/settings.toml``; returns the path."""
    p = Path(landing).resolve() / REPLAY_DIR / SETTINGS_FILE
    atomic_write(p, files_settings_toml(landing, lake_dir, base, **kw).encode("utf-8"))
    return p


__all__ = [
    "Replayer",
    "ReplayError",
    "ReleaseStats",
    "SessionReport",
    "Step",
    "SourceIndex",
    "index_source",
    "cached_index",
    "release_until",
    "session_steps",
    "start_of",
    "read_clock",
    "replay_now",
    "last_closed_session",
    "news_public_ns",
    "price_public_ns",
    "split_csv_records",
    "files_settings_toml",
    "write_settings_snippet",
    "atomic_write",
    "atomic_copy",
    "NEVER",
]
