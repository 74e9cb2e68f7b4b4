"""Query retrieval over a lake: the Python API behind `finrag search`."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import polars as pl

from ..calendar import nyse
from ..query_encoder import encode_queries
from ..storage.lake import Lake
from .fiscal import REPORTING_DAYS, calendars
from .names import NameIndex
from .query import ParsedQuery, parse_query
from .search import SearchConfig, SearchIndex, SearchResult, company_only, run_search, structured_sql


def _as_of_ns(as_of: str | dt.datetime | pd.Timestamp | None) -> int:
    if as_of is None:
        return pd.Timestamp.now(tz="UTC").as_unit("ns").value
    try:
        ts = pd.Timestamp(as_of)
    except ValueError:
        raise ValueError(f"as-of {as_of!r} is not a date or a time (YYYY-MM-DD, or an ISO time with its offset)") from None
    if ts is pd.NaT:
        raise ValueError(f"as-of {as_of!r} is not a date or a time (YYYY-MM-DD, or an ISO time with its offset)")
    if ts.tzinfo is None:
        # a bare date means "as of that day's end in New York" (so the day's close is included)
        if ts == ts.normalize() and isinstance(as_of, str) and len(as_of) <= 10:
            ts = ts + pd.Timedelta(hours=23, minutes=59, seconds=59)
        ts = ts.tz_localize("America/New_York")
    return ts.tz_convert("UTC").as_unit("ns").value


def _last_evidence_day(as_of_ns: int) -> str:
    """The last evidence partition that may hold a passage public before ``as_of_ns`` (its decision
    day); past the trading calendar's last close, its last session; before its first day, none ("")."""
    cal = nyse()
    if as_of_ns > cal.closes_ns[-1]:
        return cal.sessions[-1].item().isoformat()
    if as_of_ns < cal.opens_ns[0]:
        return ""
    return cal.decision_day(pd.Timestamp(as_of_ns, tz="UTC")).isoformat()


class SearchEngine:
    """Loads what is public before ``as_of`` once, answers many queries."""

    def __init__(self, lake: Lake, as_of=None, evidence: pl.DataFrame | None = None):
        self.lake = lake
        self.as_of_ns = _as_of_ns(as_of)
        uni = lake.read("universe")
        self.aliases = {t: [a for a in al.split("|") if a] for t, al in zip(uni["ticker"], uni["aliases"])}
        self.names = NameIndex.from_universe(uni)
        if evidence is None:
            days = [d for d in lake.materialized_dates("evidence") if d <= _last_evidence_day(self.as_of_ns)]
            evidence = lake.read("evidence", dates=days)
        self.index = SearchIndex(evidence, self.as_of_ns)
        self._con = None
        self._filings: pl.DataFrame | None = None

    @property
    def as_of_date(self) -> dt.date:
        return pd.Timestamp(self.as_of_ns, tz="UTC").tz_convert("America/New_York").date()

    def parse(self, text: str) -> ParsedQuery:
        """The query's filters, its periods read on each named company's fiscal calendar."""
        q = parse_query(text, self.names, self.as_of_date)
        if q.company_tickers and (q.periods or q.quarters_without_year):
            apply_fiscal(q, calendars(self.filings(), q.tickers, self.as_of_ns), self.as_of_date)
        if q.is_earnings and q.company_tickers:
            apply_releases(q, self.filings(), self.as_of_ns, self.index.df)
        return q

    def filings(self) -> pl.DataFrame:
        """Filing rows accepted before as-of (the fiscal calendars' source), read once."""
        if self._filings is None:
            cut = self.as_of_date.isoformat()
            days = [d for d in self.lake.materialized_dates("filings_raw") if d <= cut]
            cols = ["ticker", "form_type", "public_time", "report_date", "fiscal_period", "items"]
            self._filings = self.lake.read("filings_raw", dates=days, columns=cols) if days else pl.DataFrame()
        return self._filings

    def structured_ids(self, q: ParsedQuery, depth: int) -> list[str]:
        built = structured_sql(q, depth)
        if built is None:
            return []
        if self._con is None:  # the same SQL over the visible evidence already in memory (no file scans per query)
            import duckdb

            self._con = duckdb.connect()
            self._con.register("evidence", self.index.df.drop("embedding").to_arrow())
        sql, params = built
        params = {**params, "as_of": pd.Timestamp(self.as_of_ns, tz="UTC").to_pydatetime()}
        return [r[0] for r in self._con.execute(sql, params).fetchall()]

    def search(self, text: str, k: int = 10, budget: int = 5000, mode: str = "full", cfg: SearchConfig | None = None) -> SearchResult:
        cfg = cfg or SearchConfig(k=k, budget_tokens=budget)
        q = self.parse(text)
        q_emb = encode_queries([text])[0]  # NumPy MiniLM: no torch import for a query
        depth = cfg.list_depth * 20 if company_only(q) else cfg.list_depth  # re-ranked by keyword below
        ids = self.structured_ids(q, depth) if mode == "full" else []
        return run_search(self.index, q, q_emb, ids, cfg, mode)


def release_dates(filings: pl.DataFrame, tickers: list[str], as_of_ns: int) -> list[dt.date]:
    """The days (New York) of the company's results releases public before as-of: its 8-Ks with
    Item 2.02 (Results of Operations and Financial Condition), oldest first."""
    if filings.height == 0 or "items" not in filings.columns:
        return []
    f = filings.filter(
        pl.col("ticker").is_in(tickers)
        & pl.col("form_type").str.starts_with("8-K")
        & pl.col("items").fill_null("").str.contains("2.02", literal=True)
        & (pl.col("public_time").dt.epoch("ns") < as_of_ns)
    )
    days = {pd.Timestamp(t).tz_convert("America/New_York").date() for t in f["public_time"].to_list()}
    return sorted(days)


_RESULTS_WORDS = r"(?i)\b(results|earnings|quarter|quarterly|guidance|outlook|forecast|eps|revenue|sales|profit|loss)\b"


def news_release_day(news: pl.DataFrame, tickers: list[str], lo: dt.date, hi: dt.date, least: int = 3) -> dt.date | None:
    """The day (New York) in [lo, hi] with the most news of the company that talks about results
    (at least ``least`` stories; ties: the later day): where a company without 8-Ks in the lake
    released its results."""
    if news.height == 0:
        return None
    f = news.filter(
        pl.col("ticker").is_in(tickers) & (pl.col("source_family") == "news")
    )  # the company's news first: the regex then runs on few texts
    f = f.filter(pl.col("text").str.contains(_RESULTS_WORDS))
    if f.height == 0:
        return None
    days = [pd.Timestamp(t).tz_convert("America/New_York").date() for t in f["public_time"].to_list()]
    counts: dict[dt.date, int] = {}
    for d in days:
        if lo <= d <= hi:
            counts[d] = counts.get(d, 0) + 1
    best = max(counts.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    return best[0] if best and best[1] >= least else None


def apply_releases(q: ParsedQuery, filings: pl.DataFrame, as_of_ns: int, news: pl.DataFrame | None = None) -> None:
    """The results releases an earnings query is about, per named company: for a period it names,
    the releases after the period ends (within its reporting window), else the latest one inside the
    period (a year or quarter still running: its latest update); for a date range, the releases in
    it; otherwise the company's latest release. Releases are its 8-Ks with Item 2.02; for a company
    without any, the day its results news peaks in the same span (``news``: the visible evidence)."""
    as_of = pd.Timestamp(as_of_ns, tz="UTC").tz_convert("America/New_York").date()
    for group in q.company_tickers:
        days = release_dates(filings, list(group), as_of_ns)
        windows = [(lo, hi) for ts, lo, hi in q.period_windows if set(ts) & set(group)]
        spans: list[tuple[dt.date, dt.date, bool]] = []  # (from, to, only the latest)
        if windows:
            for lo, hi in windows:
                end = hi - dt.timedelta(days=REPORTING_DAYS)
                spans.append((end + dt.timedelta(days=1), hi, False) if end < as_of else (lo, hi, True))
        elif q.date_from or q.date_to:
            spans.append((q.date_from or dt.date.min, q.date_to or as_of, False))
        else:
            spans.append((as_of - dt.timedelta(days=REPORTING_DAYS + 92), as_of, True))
        chosen: list[tuple[dt.date, str]] = []
        for lo, hi, latest in spans:
            inside = [d for d in days if lo <= d <= hi]
            found: list[tuple[dt.date, str]] = []
            if days:
                found = [(d, "8-K") for d in (inside[-1:] if latest else inside)]
            elif news is not None:
                d = news_release_day(news, list(group), lo, min(hi, as_of))
                found = [(d, "news")] if d is not None else []
            chosen += found
            if found and not latest:
                # the period's results news starts at its release: before it, the window's news is
                # about the previous period's results
                start = min(d for d, _ in found)
                q.period_windows = [
                    (ts, max(wlo, start), whi) if set(ts) & set(group) and whi == hi else (ts, wlo, whi) for ts, wlo, whi in q.period_windows
                ]
        for d, src in dict.fromkeys(chosen):
            q.release_days.append((list(group), d, src))
            how = "its 8-K Item 2.02" if src == "8-K" else "the day its results news peaks (no 8-K in the lake)"
            q.notes.append(f"{'/'.join(group)}: results release read as {d.isoformat()} ({how}); its passages that day and the next are favoured")


def apply_fiscal(q: ParsedQuery, cals: dict, as_of: dt.date) -> None:
    """Read the query's periods on each named company's fiscal calendar (:mod:`.fiscal`): labels for
    its filings, a date window for its news, and a note saying how each was read."""
    labels = list(q.periods)
    for group in q.company_tickers:
        c = cals[group[0]]  # share classes of one company share its calendar
        own = list(q.periods) + [c.latest_quarter(n, as_of) for n in q.quarters_without_year]
        for lab in dict.fromkeys(own):
            start, end = c.period_start(lab), c.period_end(lab)
            q.period_windows.append((list(group), start, end + dt.timedelta(days=REPORTING_DAYS)))
            q.notes.append(c.describe(lab))
            if lab not in labels:
                labels.append(lab)
    q.periods = labels
