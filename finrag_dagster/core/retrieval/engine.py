"""Query retrieval over a lake: the Python API behind `finrag search`."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import polars as pl

from ..calendar import nyse
from ..embeddings import embed
from ..storage.lake import Lake
from .fiscal import REPORTING_DAYS, calendars
from .names import NameIndex
from .query import ParsedQuery, parse_query
from .search import SearchConfig, SearchIndex, SearchResult, company_only, run_search, structured_sql


def _as_of_ns(as_of: str | dt.datetime | pd.Timestamp | None) -> int:
    if as_of is None:
        return pd.Timestamp.now(tz="UTC").as_unit("ns").value
    ts = pd.Timestamp(as_of)
    if ts.tzinfo is None:
        # a bare date means "as of that day's end in New York" (so the day's close is included)
        if ts == ts.normalize() and isinstance(as_of, str) and len(as_of) <= 10:
            ts = ts + pd.Timedelta(hours=23, minutes=59, seconds=59)
        ts = ts.tz_localize("America/New_York")
    return ts.tz_convert("UTC").as_unit("ns").value


class SearchEngine:
    """Loads what is public before ``as_of`` once, answers many queries."""

    def __init__(self, lake: Lake, as_of=None, evidence: pl.DataFrame | None = None):
        self.lake = lake
        self.as_of_ns = _as_of_ns(as_of)
        uni = lake.read("universe")
        self.aliases = {t: [a for a in al.split("|") if a] for t, al in zip(uni["ticker"], uni["aliases"])}
        self.names = NameIndex.from_universe(uni)
        if evidence is None:
            cal = nyse()
            last_day = cal.decision_day(pd.Timestamp(self.as_of_ns, tz="UTC"))
            days = [d for d in lake.materialized_dates("evidence") if d <= last_day.isoformat()]
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
        return q

    def filings(self) -> pl.DataFrame:
        """Filing rows accepted before as-of (the fiscal calendars' source), read once."""
        if self._filings is None:
            cut = self.as_of_date.isoformat()
            days = [d for d in self.lake.materialized_dates("filings_raw") if d <= cut]
            cols = ["ticker", "form_type", "public_time", "report_date", "fiscal_period"]
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
        q_emb = embed([text])[0]
        depth = cfg.list_depth * 20 if company_only(q) else cfg.list_depth  # re-ranked by keyword below
        ids = self.structured_ids(q, depth) if mode == "full" else []
        return run_search(self.index, q, q_emb, ids, cfg, mode)


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
