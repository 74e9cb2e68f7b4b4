"""The source index: every record of the raw folder with its public time, kept in memory while the folder is unchanged."""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..base import SourceError
from ..edgar import read_full_submission, read_submissions_json
from ..news import NewsClock, news_public_ns, read_news_file
from ..prices import read_price_csv
from .layout import FILINGS_DIR, FULL_SUBMISSION, NEVER, NEWS_GLOB, PRICES_GLOB, SUBMISSIONS_GLOB, UNIVERSE, price_public_ns


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
