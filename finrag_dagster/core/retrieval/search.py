"""Hybrid financial query retrieval (seed 001) over the evidence visible at ``as_of``.

Three lists (semantic MiniLM cosine, keyword BM25 over the corpus public before as_of, structured
DuckDB SQL over the lake's ``evidence`` table), plus a fourth of headlines that say the change the
query asks about, are fused by RRF (k = 60), reranked multiplicatively (recency, source authority,
numeric density, fiscal period, filing section, results releases, such headlines, then a second
stage by MiniLM cosine for queries that are not quantitative) and diversified for comparisons; the
context is assembled within a token budget with numbered citations. Nothing public at or after
``as_of`` is ever read. Every rule and its measurements: docs/retrieval.md, "Query retrieval".
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl

from .lexical import PrefixStats, TermMatrix, bm25_tokens, query_matrix
from .pool import minmax
from .query import METRICS, SECTIONS, ParsedQuery
from .rrf import list_weights, rrf

NUMERIC = re.compile(r"\$\s?\d[\d,]*(?:\.\d+)?\s?(?:[MBK]|million|billion|thousand)?\b|\b\d+(?:\.\d+)?\s?%")
NEW_YORK = ZoneInfo("America/New_York")
AUTHORITY = {  # source authority by query type (seed 001 "Source Authority")
    "quantitative": {"sec_filing": 1.30, "news": 1.00},
    "comparison": {"sec_filing": 1.30, "news": 1.00},
    "risk": {"sec_filing": 1.40, "news": 0.90},
    "statement": {"sec_filing": 1.10, "news": 1.15},
    "general": {"sec_filing": 1.00, "news": 1.10},
}


@dataclass(frozen=True)
class SearchConfig:
    k: int = 10
    budget_tokens: int = 5000
    list_depth: int = 100
    rrf_k: int = 60
    recency_days: int = 180
    recency_weight: float = 0.5
    numeric_weight: float = 0.5
    numeric_saturation: int = 5
    period_boost: float = 1.5
    section_boost: float = 1.5
    diversity_companies: int = 3
    diversity_window: int = 5
    release_days: int = 1  # earnings queries: the company's passages within this many days of its results release (0: off)
    release_boost: float = 1.5
    release_from_news: bool = True  # a company without 8-Ks: its results-news peak stands for the release
    change_boost: float = 1.5  # a query asking what was raised (or cut): passages whose title says that of the metric asked (1: off)
    release_list: bool = False  # an earnings query: the named company's release-day passages form a list of their own (not kept: see docs)
    second_stage: int = 30  # a non-quantitative query: its top this many are reranked once more by the MiniLM cosine of title + text (0: off)
    second_weight: float = 0.5
    change_list: bool = True  # ... and those headlines of the named companies form a list of their own in the fusion
    when_no_recency: bool = True  # "when did ...": recency does not age the passages (the question is about a past date)
    company_lists: int = 1  # a comparison of named companies: 1 = its semantic list, 2 = also its keyword list, take the companies in turns (0: off)


@dataclass
class Hit:
    passage_id: str
    ticker: str
    source_family: str
    form_type: str | None
    item: str | None
    fiscal_period: str | None
    public_time: str
    title: str
    text: str
    url: str
    score: float
    components: dict = field(default_factory=dict)


@dataclass
class SearchResult:
    query: ParsedQuery
    as_of: str
    mode: str
    hits: list[Hit]
    context: str
    citations: list[dict]
    context_tokens: int

    def to_dict(self) -> dict:
        return {
            "query": self.query.to_dict(),
            "as_of": self.as_of,
            "mode": self.mode,
            "hits": [asdict(h) for h in self.hits],
            "context": self.context,
            "citations": self.citations,
            "context_tokens": self.context_tokens,
        }


def estimate_tokens(text: str) -> int:
    """~4 characters per token (no tokenizer download needed); documented approximation."""
    return max(1, math.ceil(len(text) / 4))


def numeric_density(text: str) -> int:
    """Count of $X.XM / XX.X% / $X,XXX style figures."""
    return len(NUMERIC.findall(text or ""))


class SearchIndex:
    """The evidence visible at as_of, with BM25 statistics and embeddings ready."""

    def __init__(self, evidence: pl.DataFrame, as_of_ns: int):
        ev = evidence.filter(pl.col("public_time").dt.epoch("ns") < as_of_ns).sort(["public_time", "passage_id"])
        self.df = ev
        self.as_of_ns = as_of_ns
        self.tm = TermMatrix.build([bm25_tokens(t) for t in ev["text"].to_list()])
        self.stats = PrefixStats(self.tm)
        self.stats.advance(ev.height)
        self.emb = ev["embedding"].to_numpy().astype(np.float32) if ev.height else np.zeros((0, 384), np.float32)
        self.pid = ev["passage_id"].to_list()
        self.row = {p: i for i, p in enumerate(self.pid)}
        self._W = None
        self._Wc = None
        self._cols: dict | None = None

    def keyword(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scores) of the passages containing a query term, by BM25, best first (ties: later row first)."""
        q = self.tm.vocab.lookup(bm25_tokens(text))
        if not q or not self.pid:
            return np.zeros(0, np.int64), np.zeros(0)
        if self._W is None:  # the saturated term weights do not depend on the query: once per index
            self._W = self.stats.weights(np.arange(len(self.pid)))
            self._Wc = self._W.tocsc()  # each term's passages, for the "contains a query term" mask
        W, Wc = self._W, self._Wc
        s = np.asarray((W @ query_matrix([q], W.shape[1], self.stats.idf()).T).todense()).ravel()
        hit = np.zeros(len(s), dtype=bool)
        for c in set(q):
            hit[Wc.indices[Wc.indptr[c] : Wc.indptr[c + 1]]] = True
        rows = np.flatnonzero(hit)
        order = rows[np.lexsort((-rows, -s[rows]))]
        return order, s[order]

    def semantic(self, q_emb: np.ndarray, top: int | None = None, among: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosines) best first (ties: later row first); with ``top``, only the best ``top``;
        with ``among``, only those rows (in the order the full ranking gives them)."""
        if not self.pid:
            return np.zeros(0, np.int64), np.zeros(0)
        if top == 0:
            return np.zeros(0, np.int64), np.zeros(0)
        if among is not None:
            rows = np.asarray(among, dtype=np.int64)
            s = self.emb[rows] @ q_emb.astype(np.float32)
            order = np.lexsort((-rows, -s))
            return rows[order], s[order].astype(np.float64)
        s = self.emb @ q_emb.astype(np.float32)
        if top is not None and top < len(s):
            cut = np.partition(s, len(s) - top)[len(s) - top]
            rows = np.flatnonzero(s >= cut)  # every row tied with the cut too: the same order as a full sort
            order = rows[np.lexsort((-rows, -s[rows]))][:top]
        else:
            order = np.lexsort((-np.arange(len(s)), -s))
        return order, s[order].astype(np.float64)

    def columns(self) -> dict:
        """The columns the rerank reads per passage, as Python lists, built once per index."""
        if self._cols is None:
            df = self.df
            self._cols = {c: df[c].to_list() for c in ("source_family", "fiscal_period", "text", "ticker", "form_type", "item", "title")}
            self._cols["pub_ns"] = df["public_time"].dt.epoch("ns").to_numpy()
            self._cols["ticker_np"] = np.asarray(self._cols["ticker"], dtype=object)
        return self._cols


# the direction of a change a query asks about, and the verbs (and nouns) a headline says it with
CHANGE_WORDS = {
    "up": re.compile(r"\b(rais(?:e|es|ed|ing)|lift(?:s|ed|ing)?|boost(?:s|ed|ing)?|hik(?:e|es|ed|ing)|ups|upped|increas(?:e|es|ed|ing))\b", re.I),
    "down": re.compile(r"\b(cut(?:s|ting)?|lower(?:s|ed|ing)?|reduc(?:e|es|ed|ing)|slash(?:es|ed|ing)?|trim(?:s|med|ming)?)\b", re.I),
}
WHEN = re.compile(r"\bwhen (?:did|was|were|has|have)\b", re.I)


def change_direction(text: str) -> list[str]:
    """The directions of change a query asks about ("raised their outlooks": up; "forecast cuts": down)."""
    return [d for d, pat in CHANGE_WORDS.items() if pat.search(text)]


def says_change(title: str, directions: list[str], metric_pats: list[re.Pattern]) -> bool:
    """A headline that says the change asked about (same direction) of a metric the query names."""
    return bool(title) and any(CHANGE_WORDS[d].search(title) for d in directions) and any(p.search(title) for p in metric_pats)


def take_turns(rows, tickers: list[str], groups: list[list[str]], depth: int) -> list[int]:
    """A ranked list re-cut for a comparison: each named company's passages in their order, the
    companies taking turns (in order of mention), ``depth`` in all; other companies' passages are left out."""
    company = {t: g for g, ts in enumerate(groups) for t in ts}
    per: list[list[int]] = [[] for _ in groups]
    for r in rows:
        g = company.get(tickers[int(r)])
        if g is not None and len(per[g]) < depth:
            per[g].append(int(r))
    out: list[int] = []
    for k in range(depth):
        for g in range(len(groups)):
            if k < len(per[g]):
                out.append(per[g][k])
    return out[:depth]


def structured_sql(q: ParsedQuery, depth: int) -> tuple[str, dict] | None:
    """DuckDB SQL over the lake's evidence table for the parsed filters (None when nothing to filter)."""
    where, params = ["public_time < $as_of"], {}
    if q.tickers:
        where.append("ticker IN (" + ", ".join(f"$t{i}" for i in range(len(q.tickers))) + ")")
        params.update({f"t{i}": t for i, t in enumerate(q.tickers)})
    if q.form_types:
        where.append("form_type IN (" + ", ".join(f"$f{i}" for i in range(len(q.form_types))) + ")")
        params.update({f"f{i}": f for i, f in enumerate(q.form_types)})
    if q.periods:
        where.append("fiscal_period IN (" + ", ".join(f"$p{i}" for i in range(len(q.periods))) + ")")
        params.update({f"p{i}": p for i, p in enumerate(q.periods)})
        # a company's news in its period's window is boosted in the rerank, not added here: as a
        # list of its own it crowds the filings that state the period's numbers out of the fusion
    if q.date_from:
        where.append("public_time >= $date_from")
        params["date_from"] = dt.datetime.combine(q.date_from, dt.time(), tzinfo=dt.timezone.utc)
    if q.date_to:
        where.append("public_time < $date_to")
        params["date_to"] = dt.datetime.combine(q.date_to + dt.timedelta(days=1), dt.time(), tzinfo=dt.timezone.utc)
    pairs = section_items(q)
    if pairs:
        ors = []
        for j, (form, item) in enumerate(pairs):
            ors.append(f"(form_type IN ($sf{j}, $sfa{j}) AND item = $si{j})")
            params.update({f"sf{j}": form, f"sfa{j}": form + "/A", f"si{j}": item})
        where.append("(" + " OR ".join(ors) + ")")
    metric_terms = [m for m in q.metrics if m not in ("margin",)]
    if len(where) == 1 and not metric_terms:
        return None
    if metric_terms:
        where.append("(" + " OR ".join(f"contains(lower(text), $m{i})" for i in range(len(metric_terms))) + ")")
        params.update({f"m{i}": m for i, m in enumerate(metric_terms)})
    latest = ""
    if q.latest and q.form_types:
        latest = "QUALIFY dense_rank() OVER (PARTITION BY ticker ORDER BY public_time DESC) = 1"
    sql = "SELECT passage_id FROM evidence WHERE " + " AND ".join(where) + f" {latest} ORDER BY public_time DESC, passage_id LIMIT {int(depth)}"
    return sql, params


def section_items(q: ParsedQuery) -> list[tuple[str, str]]:
    """The (form, item) pairs holding the filing sections the query names, on the forms it names
    (every form when it names none)."""
    out = []
    for name in q.sections:
        for form, items in SECTIONS[name].items():
            if not q.form_types or form in q.form_types:
                out += [(form, it) for it in items if (form, it) not in out]
    return out


def _diversify(order: list[int], tickers: list[str], score: dict[int, float], want: int, window: int) -> list[int]:
    """Demote duplicates out of the top window until ``want`` companies show (when they exist)."""
    order = list(order)
    need = min(want, len({tickers[i] for i in order}))
    top, rest = order[:window], order[window:]
    while len({tickers[i] for i in top}) < need:
        present = {tickers[i] for i in top}
        promote = next((i for i in rest if tickers[i] not in present), None)
        counts = Counter(tickers[i] for i in top)
        demote = next((i for i in reversed(top) if counts[tickers[i]] > 1), None)
        if promote is None or demote is None:
            break
        top.remove(demote)
        top.append(promote)
        rest.remove(promote)
        rest.insert(0, demote)
    top.sort(key=lambda i: (-score[i], -i))
    return top + rest


def company_only(q: ParsedQuery) -> bool:
    """A query whose only structured filter is its companies: their passages, newest first, say
    nothing about relevance, so the structured list orders them by keyword score instead."""
    return bool(q.tickers) and not (q.periods or q.form_types or q.date_from or q.date_to or q.latest)


def structured_list(index: SearchIndex, q: ParsedQuery, structured_ids: list[str], kw_rows: np.ndarray, depth: int) -> list[str]:
    """The structured list: the SQL's passages (newest first); for a company-only query, the
    company's passages by keyword score (those without a query term after, newest first)."""
    ids = [p for p in structured_ids if p in index.row]
    if company_only(q):
        rank = {int(r): k for k, r in enumerate(kw_rows)}
        ids.sort(key=lambda p: rank.get(index.row[p], len(rank)))  # stable: newest first among the unmatched
    return ids[:depth]


def _ns_of(day: dt.date) -> int:
    return int(dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc).timestamp()) * 1_000_000_000


def _ny_ns(day: dt.date) -> int:
    """Midnight starting ``day`` in New York, in ns since the epoch."""
    return int(dt.datetime.combine(day, dt.time(), tzinfo=NEW_YORK).timestamp()) * 1_000_000_000


def in_window(ticker: str, pub_ns: int, windows: list[tuple[set, int, int]]) -> bool:
    return any(ticker in ts and lo <= pub_ns < hi for ts, lo, hi in windows)


def diversify_named(order: list[int], tickers: list[str], score: dict[int, float], groups: list[list[str]], window: int) -> list[int]:
    """Seed 001's diversity rule for a comparison: every named company (``groups``: its tickers) that
    has a passage in ``order`` has one in the top ``window`` (as many companies as the window holds,
    in order of mention). A company's best passage is promoted in place of the lowest-ranked passage
    of a company shown more than once; the top window stays in score order."""
    company = {t: g for g, ts in enumerate(groups) for t in ts}
    order = list(order)
    top, rest = order[:window], order[window:]
    for g in range(len(groups)):
        shown = {company.get(tickers[i]) for i in top}
        if g in shown or sum(1 for x in shown if x is not None) >= window:
            continue
        promote = next((i for i in rest if company.get(tickers[i]) == g), None)
        if promote is None:
            continue  # the company has no passage at all
        counts = Counter(company.get(tickers[i], ("other", tickers[i])) for i in top)
        # demote: first an unnamed company's passage, then a named company shown more than once
        demote = next((i for i in reversed(top) if company.get(tickers[i]) is None), None)
        if demote is None:
            demote = next((i for i in reversed(top) if counts[company.get(tickers[i])] > 1), None)
        if demote is None:
            break
        top.remove(demote)
        top.append(promote)
        rest.remove(promote)
        rest.insert(0, demote)
    top.sort(key=lambda i: (-score[i], -i))
    return top + rest


def grouped(hits: list[Hit], groups: list[list[str]]) -> list[Hit]:
    """Hits ordered company by company (named companies in order of mention, then the others),
    best first within a company."""
    company = {t: g for g, ts in enumerate(groups) for t in ts}
    return sorted(hits, key=lambda h: company.get(h.ticker, len(groups)))  # stable: rank order within


def assemble_context(hits: list[Hit], budget: int, groups: list[list[str]] | None = None) -> tuple[str, list[dict], int]:
    """Numbered passages with their source line, added best first while they fit the budget; with
    ``groups`` (a comparison's companies) listed company by company under a heading each."""
    parts, cites, used = [], [], 0
    heading = None
    if groups:
        hits = grouped(hits, groups)
    for h in hits:
        head = ""
        if groups:
            g = next((ts for ts in groups if h.ticker in ts), None)
            title = "/".join(g) if g else "other companies"
            head = f"## {title}\n" if title != heading else ""
        where = " · ".join(x for x in [h.ticker, h.form_type or "news", h.item or "", h.fiscal_period or "", h.public_time[:16] + " UTC"] if x)
        block = f"[{len(cites) + 1}] {where}\n{h.title}\n{h.text}\n"
        cost = estimate_tokens(block) + (estimate_tokens(head) if head else 0)
        if used + cost > budget:
            continue
        if head:
            parts.append(head)
            heading = title
        parts.append(block)
        used += cost
        cites.append(
            {"n": len(cites) + 1, "passage_id": h.passage_id, "ticker": h.ticker, "title": h.title, "url": h.url, "public_time": h.public_time}
        )
    return "\n".join(parts), cites, used


@dataclass(frozen=True)
class _FullQuery:
    """What the full mode's steps share: the index, the query, its embedding and keyword ranking,
    the config, and the change the query asks about (directions, the metric patterns)."""

    index: SearchIndex
    q: ParsedQuery
    q_emb: np.ndarray
    kw_rows: np.ndarray
    cfg: SearchConfig
    directions: list[str]
    metric_pats: list[re.Pattern]


@dataclass(frozen=True)
class _Boosts:
    """The query's rerank constants: source authority, the (form, item) sections, the period
    windows and results releases it names, and whether recency ages the passages."""

    auth: dict
    sect: set
    windows: list
    releases: list
    aged: bool


def _single_score_order(index: SearchIndex, mode: str, kw: tuple[np.ndarray, np.ndarray], se: tuple[np.ndarray, np.ndarray]) -> tuple[list, dict]:
    """(order, score) of the one-score modes: bm25, dense, hybrid (mean of the min-max scores)."""
    kw_rows, kw_s = kw
    se_rows, se_s = se
    if mode == "bm25":
        return list(kw_rows), dict(zip(kw_rows.tolist(), kw_s.tolist()))
    if mode == "dense":
        return list(se_rows), dict(zip(se_rows.tolist(), se_s.tolist()))
    n = len(index.pid)
    b = np.zeros(n)
    b[kw_rows] = kw_s
    d = np.zeros(n)
    d[se_rows] = se_s
    h = (minmax(b) + minmax(d)) / 2 if n else np.zeros(0)
    return list(np.lexsort((-np.arange(n), -h))), dict(enumerate(h.tolist()))


def _names_companies(q: ParsedQuery) -> bool:
    """A comparison that names at least two companies."""
    return q.is_comparison and len(q.company_tickers) >= 2


def _release_windows(q: ParsedQuery, cfg: SearchConfig) -> list[tuple[set, int, int]]:
    """The results releases an earnings query asks about: its company's (tickers, from, to) from the
    release day (New York) to ``release_days`` after it."""
    return [
        (set(ts), _ny_ns(d), _ny_ns(d + dt.timedelta(days=cfg.release_days + 1)))
        for ts, d, src in q.release_days
        if cfg.release_from_news or src == "8-K"
    ]


def _by_keyword_rank(fq: _FullQuery, rows: list[int], tickers: list[str]) -> list[str]:
    """``rows`` best keyword match first (the unmatched after, later row first), taken by the named
    companies in turns for a comparison; their passage ids, ``list_depth`` at most."""
    depth = fq.cfg.list_depth
    rank = {int(r): k for k, r in enumerate(fq.kw_rows)}
    rows.sort(key=lambda i: (rank.get(i, len(rank)), -i))
    if _names_companies(fq.q):
        rows = take_turns(rows, tickers, fq.q.company_tickers, depth)
    return [fq.index.pid[i] for i in rows[:depth]]


def _fusion_lists(fq: _FullQuery, se_rows: np.ndarray, structured_ids: list[str]) -> dict[str, list[str]]:
    """The ranked lists RRF fuses (seed 001): semantic, keyword, structured, and the change and
    release lists when they are on."""
    index, q, cfg, depth = fq.index, fq.q, fq.cfg, fq.cfg.list_depth
    kw_list, se_list = fq.kw_rows, se_rows
    if cfg.company_lists and _names_companies(q):
        named = np.flatnonzero(np.isin(index.columns()["ticker_np"], [t for g in q.company_tickers for t in g]))
        se_list = take_turns(index.semantic(fq.q_emb, among=named)[0], index.columns()["ticker"], q.company_tickers, depth)
        if cfg.company_lists >= 2:
            kw_list = take_turns(kw_list, index.columns()["ticker"], q.company_tickers, depth)
    lists = {
        "semantic": [index.pid[i] for i in se_list[:depth]],
        "keyword": [index.pid[i] for i in kw_list[:depth]],
        "structured": structured_list(index, q, structured_ids, fq.kw_rows, depth),
    }
    cols = index.columns()
    if cfg.change_list and fq.metric_pats and q.tickers:
        # the named companies' headlines that say the change asked about, best keyword match first
        named_set, titles = set(q.tickers), cols["title"]
        rows = [i for i, t in enumerate(cols["ticker"]) if t in named_set and says_change(titles[i], fq.directions, fq.metric_pats)]
        lists["change"] = _by_keyword_rank(fq, rows, cols["ticker"])
    if cfg.release_list and cfg.release_days and q.release_days:
        wins = _release_windows(q, cfg)
        pubs, ticks = cols["pub_ns"], cols["ticker"]
        rows = [i for i in range(len(index.pid)) if in_window(ticks[i], int(pubs[i]), wins)]
        lists["release"] = _by_keyword_rank(fq, rows, ticks)
    return lists


def _boosts(fq: _FullQuery, as_of: dt.datetime) -> _Boosts:
    """The rerank constants of the query (seed 001 "Source Authority", recency, period, release, section)."""
    q, cfg = fq.q, fq.cfg
    windows = [(set(ts), _ns_of(lo), _ns_of(hi + dt.timedelta(days=1))) for ts, lo, hi in q.period_windows]
    # recency ages passages unless the query asks for a period, or names a time that ended more
    # than recency_days before as-of (an event it dates explicitly is not buried under later news)
    aged = not q.periods and not (q.named_until and (as_of.date() - q.named_until).days > cfg.recency_days)
    if cfg.when_no_recency and WHEN.search(q.text):
        aged = False  # "when did X raise its outlook": the answer is a past date, newer is not better
    return _Boosts(
        auth=AUTHORITY.get(q.query_type, AUTHORITY["general"]),
        sect=set(section_items(q)),
        windows=windows,
        releases=_release_windows(q, cfg) if cfg.release_days else [],
        aged=aged,
    )


def _passage_factors(fq: _FullQuery, b: _Boosts, i: int, s: float) -> tuple[float, dict]:
    """(multiplier, components) of passage row ``i`` with RRF score ``s``: the product of its rerank factors."""
    cols, cfg, q = fq.index.columns(), fq.cfg, fq.q
    fam, fp, pub_ns, tick = cols["source_family"], cols["fiscal_period"], cols["pub_ns"], cols["ticker"]
    forms, items = cols["form_type"], cols["item"]
    f = {"rrf": s}
    m = 1.0
    if b.aged:
        days = (fq.index.as_of_ns - pub_ns[i]) / 86_400e9
        rec = max(0.0, 1 - days / cfg.recency_days)
        f["recency"] = rec
        m *= 1 + cfg.recency_weight * rec
    a = b.auth.get(fam[i], 1.0)
    f["authority"] = a
    m *= a
    if q.is_quantitative:
        nd = min(numeric_density(cols["text"][i]), cfg.numeric_saturation) / cfg.numeric_saturation
        f["numeric_density"] = nd
        m *= 1 + cfg.numeric_weight * nd
    if q.periods and fp[i] in q.periods:
        f["period_match"] = 1.0
        m *= cfg.period_boost
    elif fam[i] == "news" and in_window(tick[i], int(pub_ns[i]), b.windows):
        f["period_window"] = 1.0  # the company's news in its fiscal period's window
        m *= cfg.period_boost
    if b.releases and in_window(tick[i], int(pub_ns[i]), b.releases):
        f["release"] = 1.0  # the company's passages on and just after the results release asked about
        m *= cfg.release_boost
    if cfg.change_boost != 1.0 and fq.metric_pats and says_change(cols["title"][i], fq.directions, fq.metric_pats):
        f["change"] = 1.0  # the headline says the metric was raised (cut), as the query asks
        m *= cfg.change_boost
    if b.sect and forms[i] and (forms[i].removesuffix("/A"), items[i]) in b.sect:
        f["section_match"] = 1.0  # the filing section the query names
        m *= cfg.section_boost
    return m, f


def _rerank(fq: _FullQuery, fused: dict[str, float], as_of: dt.datetime) -> tuple[dict[int, float], dict[int, dict]]:
    """Seed 001's multiplicative rerank of the fused list: (score, components) by passage row."""
    b = _boosts(fq, as_of)
    score: dict[int, float] = {}
    comp: dict[int, dict] = {}
    for pid, s in fused.items():
        i = fq.index.row[pid]
        m, f = _passage_factors(fq, b, i, s)
        score[i] = s * m
        comp[i] = f
    return score, comp


def _second_stage(fq: _FullQuery, order: list[int], score: dict[int, float], comp: dict[int, dict]) -> list[int]:
    """The top ``second_stage`` reranked once more: ×(1 + second_weight·cos), cos the min-max (within
    the top) cosine of title + text; not for quantitative queries, where the figures and periods the
    rerank reads matter more than wording. Updates ``score`` and ``comp`` in place."""
    cfg = fq.cfg
    if not (cfg.second_stage and len(order) > 1 and not fq.q.is_quantitative):
        return order
    head = order[: cfg.second_stage]
    cos = minmax(fq.index.emb[np.asarray(head)] @ fq.q_emb.astype(np.float32))
    for i, c in zip(head, cos.tolist()):
        comp[i]["second_stage"] = c
        score[i] *= 1 + cfg.second_weight * c
    return sorted(head, key=lambda i: (-score[i], -i)) + order[cfg.second_stage :]


def _full_order(fq: _FullQuery, se_rows: np.ndarray, structured_ids: list[str], as_of: dt.datetime) -> tuple[list[int], dict, dict]:
    """Mode full: RRF of the lists (k = rrf_k), the rerank, the second stage, then diversity."""
    q, cfg = fq.q, fq.cfg
    fused = rrf(_fusion_lists(fq, se_rows, structured_ids), list_weights(q.names_ticker_or_metric), k=cfg.rrf_k)
    score, comp = _rerank(fq, fused, as_of)
    order = _second_stage(fq, sorted(score, key=lambda i: (-score[i], -i)), score, comp)
    tick = fq.index.columns()["ticker"]
    if _names_companies(q):
        order = diversify_named(order, tick, score, q.company_tickers, cfg.diversity_window)
    elif q.is_comparison:
        order = _diversify(order, tick, score, cfg.diversity_companies, cfg.diversity_window)
    return order, score, comp


def _hits(df: pl.DataFrame, order: list, score: dict, comp: dict, k: int) -> list[Hit]:
    """The first ``k`` rows of ``order`` as hits, with their scores and rerank components."""
    hits = []
    for i in order[: max(k, 0)]:
        r = df.row(int(i), named=True)
        hits.append(
            Hit(
                passage_id=r["passage_id"],
                ticker=r["ticker"],
                source_family=r["source_family"],
                form_type=r["form_type"],
                item=r["item"],
                fiscal_period=r["fiscal_period"],
                public_time=r["public_time"].isoformat(),
                title=r["title"],
                text=r["text"],
                url=r["url"],
                score=float(score.get(int(i), 0.0)),
                components=comp.get(int(i), {}),
            )
        )
    return hits


def run_search(
    index: SearchIndex,
    q: ParsedQuery,
    q_emb: np.ndarray,
    structured_ids: list[str],
    cfg: SearchConfig = SearchConfig(),
    mode: str = "full",
) -> SearchResult:
    """mode: bm25 | dense | hybrid (min-max score fusion) | full (RRF of three lists + rerank + diversity)."""
    as_of = dt.datetime.fromtimestamp(index.as_of_ns / 1e9, tz=dt.timezone.utc)
    kw_rows, kw_s = index.keyword(q.text)
    top = {"bm25": 0, "dense": max(cfg.k, 0), "full": cfg.list_depth}.get(mode)  # hybrid fuses every score
    se_rows, se_s = index.semantic(q_emb, top)
    comp: dict[int, dict] = {}
    if mode in ("bm25", "dense", "hybrid"):
        order, score = _single_score_order(index, mode, (kw_rows, kw_s), (se_rows, se_s))
    elif mode == "full":
        directions = change_direction(q.text) if cfg.change_boost != 1.0 or cfg.change_list else []
        metric_pats = [re.compile(rf"(?<![\w]){re.escape(t)}s?(?![\w])", re.I) for m in q.metrics for t in METRICS[m]] if directions else []
        fq = _FullQuery(index=index, q=q, q_emb=q_emb, kw_rows=kw_rows, cfg=cfg, directions=directions, metric_pats=metric_pats)
        order, score, comp = _full_order(fq, se_rows, structured_ids, as_of)
    else:
        raise ValueError(f"unknown search mode {mode!r}")
    hits = _hits(index.df, order, score, comp, cfg.k)
    groups = q.company_tickers if _names_companies(q) else None
    context, cites, used = assemble_context(hits, cfg.budget_tokens, groups)
    return SearchResult(q, as_of.isoformat(), mode, hits, context, cites, used)
