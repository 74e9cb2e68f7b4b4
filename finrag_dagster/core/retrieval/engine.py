"""Query retrieval over a lake: the Python API behind `finrag search`."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import polars as pl

from ..calendar import nyse
from ..embeddings import embed
from ..lake import Lake
from .names import NameIndex
from .query import ParsedQuery, parse_query
from .search import SearchConfig, SearchIndex, SearchResult, run_search, structured_sql


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

    @property
    def as_of_date(self) -> dt.date:
        return pd.Timestamp(self.as_of_ns, tz="UTC").tz_convert("America/New_York").date()

    def parse(self, text: str) -> ParsedQuery:
        return parse_query(text, self.names, self.as_of_date)

    def structured_ids(self, q: ParsedQuery, depth: int) -> list[str]:
        built = structured_sql(q, depth)
        if built is None:
            return []
        if self._con is None:
            self._con = self.lake.duckdb(tables=["evidence"])
        sql, params = built
        params = {**params, "as_of": pd.Timestamp(self.as_of_ns, tz="UTC").to_pydatetime()}
        return [r[0] for r in self._con.execute(sql, params).fetchall()]

    def search(self, text: str, k: int = 10, budget: int = 5000, mode: str = "full", cfg: SearchConfig | None = None) -> SearchResult:
        cfg = cfg or SearchConfig(k=k, budget_tokens=budget)
        q = self.parse(text)
        q_emb = embed([text])[0]
        ids = self.structured_ids(q, cfg.list_depth) if mode == "full" else []
        return run_search(self.index, q, q_emb, ids, cfg, mode)
