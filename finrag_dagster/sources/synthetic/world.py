"""``generate_world``: build the whole synthetic world and write it in the real formats.

Layout under ``out_dir`` (see docs/synthetic_world.md)::

    raw/universe/tickers.csv                       ticker,cik,sec_title,Security,gics_sector,gics_sub_industry
    raw/news/fnspid_news_<YYYY>.csv                FNSPID news columns, one file per year
    raw/prices/<ticker>.csv                        Date,Open,High,Low,Close,Adj Close,Volume
    raw/sec/submissions/CIK##########.json         SEC submissions API JSON
    raw/sec/sec-edgar-filings/<T>/<FORM>/<ACC>/full-submission.txt
    truth/world.json, events.parquet, documents.parquet, source_utility.parquet, prices_truth.parquet

The pipeline reads only ``raw/`` (through the real-format loaders); ``truth/`` is for tests.
Same settings -> byte-identical files.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import io
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock

from ...core.calendar import nyse
from ...core.settings import WorldSettings
from . import params as P
from . import text as T
from .clock import WorldDays, et_date, to_utc
from .events import Event, quarter_ends, realise_events, schedule_events
from .filings import (
    EightK,
    Filing,
    QuarterFin,
    assign_accessions,
    event_items,
    fq_long,
    full_submission,
    fundamentals,
    next_fq,
    periodic_filings,
    press_release_echo,
    render_8k_body,
    render_periodic,
    submissions_json,
)
from .market import (
    S_BACKGROUND,
    S_EVENTS,
    S_FILINGS,
    S_NEWS,
    PriceSeries,
    build_prices,
    rng_for,
    simulate_market,
    simulate_sector,
    stock_params,
)
from .news import FNSPID_COLUMNS, NewsBuilder, NewsRow
from .universe import SECTOR_ORDER, Company, select_universe

DISCLAIMER = (
    "SYNTHETIC DATA. Tickers, company names and SEC CIKs are real identifiers, but every price, "
    "number, news article, filing text and event in this world is generated from a seeded model."
)
UTC_TS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class WorldManifest:
    """What :func:`generate_world` wrote."""

    out_dir: Path
    seed: int
    tickers: tuple[str, ...]
    n_events: int
    n_news_rows: int
    n_price_rows: int
    n_filings: int
    n_documents: int

    @property
    def raw_dir(self) -> Path:
        return self.out_dir / "raw"

    @property
    def truth_dir(self) -> Path:
        return self.out_dir / "truth"

    def __str__(self) -> str:
        return (
            f"world seed={self.seed}: {len(self.tickers)} tickers, {self.n_events} events, "
            f"{self.n_news_rows} news rows, {self.n_price_rows} price rows, {self.n_filings} filings"
        )


# ------------------------------------------------------------------ generation
@dataclass
class _World:
    wd: WorldDays
    companies: list[Company]
    prices: dict[str, PriceSeries]
    events: list[Event]
    event_price_ids: dict[str, np.ndarray]
    news: list[NewsRow]
    filings: list[Filing]
    texts: dict[str, str]  # accession -> full submission
    params: dict[str, dict]


def build_world(s: WorldSettings) -> _World:
    """Everything in memory (no files)."""
    seed = s.seed
    wd = WorldDays.build(nyse(), s.start, s.end)
    n = len(wd)
    companies = select_universe(s.n_tickers, s.n_sectors, s.market_ticker)
    stocks, market = companies[:-1], companies[-1]
    mk = simulate_market(seed, n)
    sector_paths = _sector_paths(seed, stocks, mk)
    first_idx = _first_news_index(s, wd)
    prices, events, stock_info, event_price_ids = _stock_markets(s, wd, stocks, sector_paths, mk, first_idx)
    prices[market.ticker], event_price_ids[market.ticker] = _market_proxy(seed, market, mk, n)
    by_ticker = _events_by_ticker(stocks, events)
    fin = _fundamentals(seed, wd, stocks, by_ticker)
    news, anchor_title, subject = _news(s, wd, companies, stocks, prices, fin, by_ticker, first_idx)
    filings, texts = _filings(s, wd, stocks, fin, by_ticker, anchor_title, subject)
    events.sort(key=lambda e: (e.d_idx, e.ticker))
    filings.sort(key=lambda f: (f.accept_ns, f.accession))
    return _World(wd, companies, prices, events, event_price_ids, news, filings, texts, {"stocks": stock_info, "regime": mk.regime})


def _sector_paths(seed: int, stocks: list[Company], mk) -> dict[str, tuple[np.ndarray, float]]:
    """One simulated sector factor path per sector, in order of the first stock of each sector."""
    sector_paths: dict[str, tuple[np.ndarray, float]] = {}
    for c in stocks:
        if c.sector not in sector_paths:
            key = SECTOR_ORDER.index(c.sector) if c.sector in SECTOR_ORDER else 99
            sector_paths[c.sector] = simulate_sector(seed, key, mk.regime)
    return sector_paths


def _first_news_index(s: WorldSettings, wd: WorldDays) -> int:
    """The session index of news_start; it must leave room for events before the end."""
    first_idx = wd.index_on_or_after(s.news_start)
    if first_idx >= len(wd) - 6:
        raise ValueError(f"news_start {s.news_start} leaves no room for events before {s.end}")
    return first_idx


def _stock_markets(s: WorldSettings, wd: WorldDays, stocks: list[Company], sector_paths, mk, first_idx: int):
    """Each stock's events and prices, stock by stock; returns (prices, events, stock_info, event_price_ids)."""
    prices: dict[str, PriceSeries] = {}
    events: list[Event] = []
    stock_info: dict[str, dict] = {}
    event_price_ids: dict[str, np.ndarray] = {}
    for c in stocks:
        series, evs, ids, info = _stock_market(s, wd, c, sector_paths, mk, first_idx)
        prices[c.ticker] = series
        event_price_ids[c.ticker] = ids
        events.extend(evs)
        stock_info[c.ticker] = info
    return prices, events, stock_info, event_price_ids


def _stock_market(s: WorldSettings, wd: WorldDays, c: Company, sector_paths, mk, first_idx: int):
    """One stock's parameters, scheduled events and prices; returns (prices, events, event id per session, parameters)."""
    seed, n = s.seed, len(wd)
    f, fvol = sector_paths[c.sector]
    sp = stock_params(seed, c, fvol, mk.pi_turb, s.events_per_ticker_year)
    rng = rng_for(seed, S_EVENTS, c.uid)
    evs = schedule_events(rng, c, wd, first_idx, s.events_per_ticker_year)
    abn, spike = realise_events(rng, evs, wd, sp.unit, n)
    series = build_prices(seed, c, sp, mk, f, abn, spike)
    ids = np.full(n, "", dtype=object)
    for e in evs:
        for k in range(1, 6):
            if abs(abn[e.d_idx + k]) > 0:
                ids[e.d_idx + k] = e.event_id
    info = {
        "beta": sp.beta,
        "gamma": sp.gamma,
        "alpha": sp.alpha,
        "sigma_idio": sp.sigma_idio,
        "sector_vol": sp.sector_vol,
        "residual_sd_no_events": sp.s_base,
        "unit_u": sp.unit,
        "dividend_yield": sp.dividend_yield,
        "price0": sp.price0,
    }
    return series, evs, ids, info


def _market_proxy(seed: int, market: Company, mk, n: int) -> tuple[PriceSeries, np.ndarray]:
    """The market proxy's prices (no events) and its empty event ids."""
    msp = stock_params(seed, market, 0.0, mk.pi_turb, 0.0)
    return build_prices(seed, market, msp, mk, np.zeros(n), np.zeros(n), np.zeros(n)), np.full(n, "", dtype=object)


def _events_by_ticker(stocks: list[Company], events: list[Event]) -> dict[str, list[Event]]:
    """Each stock's events, in the order generated."""
    by_ticker: dict[str, list[Event]] = {c.ticker: [] for c in stocks}
    for e in events:
        by_ticker[e.ticker].append(e)
    return by_ticker


def _fundamentals(seed: int, wd: WorldDays, stocks: list[Company], by_ticker) -> dict[str, dict[dt.date, QuarterFin]]:
    """Quarterly fundamentals per stock (numbers lean toward the tone of each quarter's earnings 8-K)."""
    fin: dict[str, dict[dt.date, QuarterFin]] = {}
    for c in stocks:
        tones = {e.fq.end: int(e.sec_tone) for e in by_ticker[c.ticker] if e.quarterly and e.fq and e.sec_tone is not None}
        fin[c.ticker] = fundamentals(seed, c, wd.days[0], wd.days[-1], tones)
    return fin


def _news(s: WorldSettings, wd: WorldDays, companies: list[Company], stocks: list[Company], prices, fin, by_ticker, first_idx: int):
    """Event and background news of every stock, published by the world's end and in file order;
    returns (rows, anchor title per event, subject per event). ``s``: the seed, the background rate
    and whether publishers follow the tone's rightness (settings ``[world]``)."""
    seed, background_rate, publisher_utility = s.seed, s.background_per_ticker_year, s.publisher_utility
    cmap = {c.ticker: c for c in companies}
    closes = {t: p.close for t, p in prices.items()}
    peers = {c.ticker: [o.ticker for o in stocks if o.sector == c.sector and o.ticker != c.ticker] for c in stocks}
    news: list[NewsRow] = []
    anchor_title: dict[str, str] = {}
    subject: dict[str, str] = {}
    years = (wd.days[-1] - wd.days[first_idx]).days / 365.25
    for c in stocks:
        nb = NewsBuilder(rng_for(seed, S_NEWS, c.uid), wd, cmap, closes, fin, peers, publisher_utility)
        for e in by_ticker[c.ticker]:
            rows, title, subj = nb.event_rows(e)
            anchor_title[e.event_id], subject[e.event_id] = title, subj
            news.extend(rows)
        bg = NewsBuilder(rng_for(seed, S_BACKGROUND, c.uid), wd, cmap, closes, fin, peers)
        news.extend(bg.background_rows(c, wd.days[first_idx], years, background_rate))
    last_ns = int(wd.closes[-1])
    news = [r for r in news if r.public_ns <= last_ns]
    news.sort(key=lambda r: (r.date_str, r.ticker, r.url, r.role))
    return news, anchor_title, subject


def _filings(s: WorldSettings, wd: WorldDays, stocks: list[Company], fin, by_ticker, anchor_title, subject):
    """Every stock's filings and their full-submission texts; returns (filings, text per accession)."""
    filings: list[Filing] = []
    texts: dict[str, str] = {}
    for c in stocks:
        filings.extend(_company_filings(s, wd, c, fin, by_ticker[c.ticker], anchor_title, subject, texts))
    return filings, texts


def _company_filings(
    s: WorldSettings, wd: WorldDays, c: Company, fin, evs: list[Event], anchor_title, subject, texts: dict[str, str]
) -> list[Filing]:
    """One company's periodic filings and 8-Ks with accessions, their texts added to ``texts``, and
    each event's accession, anchor title and subject noted on the event."""
    frng = rng_for(s.seed, S_FILINGS, c.uid, 1)
    fl = periodic_filings(s.seed, c, wd, fin[c.ticker], evs)
    for e in evs:
        if e.k8_ns is None:
            continue
        items = event_items(e, anchor_title[e.event_id], frng)
        fl.append(Filing(c.ticker, c.cik, "8-K", int(e.k8_ns), et_date(e.event_ns), items, e.event_id, int(e.sec_tone), "companion", e.fq))
    assign_accessions(fl, wd, frng)
    ev_by_id = {e.event_id: e for e in evs}
    legal_events = [e for e in evs if e.event_type == P.LEGAL]
    for f in fl:
        texts[f.accession] = _filing_text(s, c, f, fin, ev_by_id, legal_events, anchor_title, subject)
    for e in evs:
        e.extra["accession"] = next((f.accession for f in fl if f.event_id == e.event_id), None)
        e.extra["anchor_title"] = anchor_title[e.event_id]
        e.extra["subject"] = subject[e.event_id]
    return fl


def _filing_text(s: WorldSettings, c: Company, f: Filing, fin, ev_by_id: dict[str, Event], legal_events: list[Event], anchor_title, subject) -> str:
    """The full submission of one filing: an 8-K's body from its event, a periodic report's with the
    legal matters reported before it."""
    execs = T.EXECUTIVES
    exec_name = execs[(c.uid + f.report_date.year) % len(execs)]
    cfo_name = execs[(c.uid + f.report_date.year + 3) % len(execs)]
    if f.form == "8-K":
        e = ev_by_id[f.event_id]
        fq = e.fq or current_quarter(c, f.report_date)
        info = {"qf": fin[c.ticker].get(fq.end), "long": fq_long(fq), "next_long": fq_long(next_fq(fq, c.fye_month))}
        echo = press_release_echo(anchor_title[e.event_id]) if s.press_release_echo else ""
        docs = render_8k_body(EightK(c, f, e, exec_name, cfo_name, f.report_date, subject[e.event_id], info, echo))
    else:
        notes = [
            f"In {to_utc(le.event_ns).strftime('%B %Y')}, the Company reported a matter described as the {subject[le.event_id]}."
            for le in legal_events
            if le.event_ns < f.accept_ns
        ][-3:]
        body = render_periodic(c, f, fin[c.ticker], notes, exec_name)
        docs = [(f.form, f.primary_doc, body)]
    return full_submission(c, f, docs)


def current_quarter(c: Company, day: dt.date):
    """The fiscal quarter whose period contains ``day``."""
    return next(q for q in quarter_ends(c, day, day + dt.timedelta(days=120)))


# ------------------------------------------------------------------ writing
def _fmt(x: float) -> str:
    return f"{x:.6f}"


def _write_text(path: Path, text: str, newline: str = "\n") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline=newline) as fh:
        fh.write(text)


def _csv_text(header, rows, lineterminator: str) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=lineterminator)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _write_parquet(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd", write_statistics=False)


def _ts(ns_list) -> pa.Array:
    return pa.array([None if v is None else int(v) // 1000 for v in ns_list], type=UTC_TS)


def write_raw(w: _World, raw: Path, news_end: dt.date | None = None) -> dict[str, int]:
    """Write the raw (real-format) files (news decided after ``news_end`` left out); returns counts."""
    cal = w.companies
    uni_rows = [[c.ticker, str(c.cik), c.sec_title, c.company, c.sector, c.sub_industry] for c in cal]
    _write_text(
        raw / "universe" / "tickers.csv", _csv_text(["ticker", "cik", "sec_title", "Security", "gics_sector", "gics_sub_industry"], uni_rows, "\n")
    )
    news = w.news
    if news_end is not None and news:
        decided = nyse().decision_days(np.array([r.public_ns for r in news], dtype=np.int64))
        news = [r for r, d in zip(news, decided) if d <= np.datetime64(news_end, "D")]
    by_year: dict[str, list[list[str]]] = {}
    for r in news:
        by_year.setdefault(r.date_str[:4], []).append(r.fnspid())
    for year in sorted(by_year):
        _write_text(raw / "news" / f"fnspid_news_{year}.csv", _csv_text(FNSPID_COLUMNS, by_year[year], "\n"))
    n_price = 0
    for t in sorted(w.prices):
        p = w.prices[t]
        rows = [
            [d.isoformat(), _fmt(p.open[i]), _fmt(p.high[i]), _fmt(p.low[i]), _fmt(p.close[i]), _fmt(p.adj_close[i]), str(int(p.volume[i]))]
            for i, d in enumerate(w.wd.days)
        ]
        n_price += len(rows)
        _write_text(raw / "prices" / f"{t.lower()}.csv", _csv_text(["Date", "Open", "High", "Low", "Close", "Adj Close", "Volume"], rows, "\r\n"))
    sizes = {acc: len(txt.encode("utf-8")) for acc, txt in w.texts.items()}
    by_t: dict[str, list[Filing]] = {}
    for f in w.filings:
        by_t.setdefault(f.ticker, []).append(f)
        _write_text(raw / "sec" / "sec-edgar-filings" / f.ticker / f.form / f.accession / "full-submission.txt", w.texts[f.accession])
    cmap = {c.ticker: c for c in w.companies}
    for t in sorted(by_t):
        c = cmap[t]
        _write_text(raw / "sec" / "submissions" / f"CIK{c.cik:010d}.json", submissions_json(c, by_t[t], sizes))
    return {"news_rows": len(news), "price_rows": n_price, "filings": len(w.filings)}


def documents_table(w: _World) -> pa.Table:
    cal = nyse()
    ev_type = {e.event_id: e.event_type for e in w.events}
    rows = []
    for r in w.news:
        rows.append(
            (
                r.url,
                r.ticker,
                "news",
                r.role,
                r.event_id,
                r.event_type,
                r.tone,
                r.public_ns,
                r.date_only,
                r.reveals_event_id,
                r.reveals_h,
                r.in_utility,
                r.title,
                None,
            )
        )
    for f in w.filings:
        rows.append(
            (
                f.accession,
                f.ticker,
                "sec_filing",
                f.role,
                f.event_id,
                ev_type.get(f.event_id) if f.event_id else None,
                f.tone,
                f.accept_ns,
                False,
                None,
                None,
                f.role == "companion",
                f"{f.form} {','.join(f.items)}".strip(),
                f.form,
            )
        )
    rows.sort(key=lambda x: (x[7], x[2], x[0], x[1], x[3]))
    cols = list(zip(*rows)) if rows else [[] for _ in range(14)]
    pub = np.asarray(cols[7], dtype=np.int64)
    dd = cal.decision_days(pub) if len(pub) else np.array([], dtype="datetime64[D]")
    return pa.table(
        {
            "key": pa.array(cols[0], pa.string()),
            "ticker": pa.array(cols[1], pa.string()),
            "source_family": pa.array(cols[2], pa.string()),
            "role": pa.array(cols[3], pa.string()),
            "event_id": pa.array(cols[4], pa.string()),
            "event_type": pa.array(cols[5], pa.string()),
            "tone": pa.array(cols[6], pa.int8()),
            "public_time": _ts(cols[7]),
            "date_only": pa.array(cols[8], pa.bool_()),
            "reveals_event_id": pa.array(cols[9], pa.string()),
            "reveals_horizon": pa.array(cols[10], pa.int8()),
            "in_utility": pa.array(cols[11], pa.bool_()),
            "title": pa.array(cols[12], pa.string()),
            "form_type": pa.array(cols[13], pa.string()),
            "decision_day": pa.array(dd.astype("datetime64[D]"), pa.date32()),
        }
    )


def events_table(w: _World) -> pa.Table:
    es = w.events
    d = [w.wd.days[e.d_idx] for e in es]
    return pa.table(
        {
            "event_id": pa.array([e.event_id for e in es], pa.string()),
            "ticker": pa.array([e.ticker for e in es], pa.string()),
            "sector": pa.array([e.sector for e in es], pa.string()),
            "event_type": pa.array([e.event_type for e in es], pa.string()),
            "event_time": _ts([e.event_ns for e in es]),
            "decision_day": pa.array(d, pa.date32()),
            "d_short": pa.array([e.d_short for e in es], pa.int8()),
            "d_long": pa.array([e.d_long for e in es], pa.int8()),
            "car_1": pa.array([e.car[0] for e in es], pa.float64()),
            "car_3": pa.array([e.car[1] for e in es], pa.float64()),
            "car_5": pa.array([e.car[2] for e in es], pa.float64()),
            "dir_1": pa.array([e.dirs[0] for e in es], pa.int8()),
            "dir_3": pa.array([e.dirs[1] for e in es], pa.int8()),
            "dir_5": pa.array([e.dirs[2] for e in es], pa.int8()),
            "timing": pa.array([e.bucket for e in es], pa.string()),
            "quarterly_earnings": pa.array([e.quarterly for e in es], pa.bool_()),
            "fiscal_period": pa.array([e.fq.label if e.fq else None for e in es], pa.string()),
            "anchor_time": _ts([e.anchor_ns for e in es]),
            "anchor_title": pa.array([e.extra.get("anchor_title") for e in es], pa.string()),
            "subject": pa.array([e.extra.get("subject") for e in es], pa.string()),
            "news_tone": pa.array([e.news_tone for e in es], pa.int8()),
            "sec_tone": pa.array([e.sec_tone for e in es], pa.int8()),
            "accession": pa.array([e.extra.get("accession") for e in es], pa.string()),
            "k8_time": _ts([e.k8_ns for e in es]),
            "jump_u": pa.array([e.j for e in es], pa.float64()),
            "drift_u": pa.array([e.l for e in es], pa.float64()),
            "unit_u": pa.array([e.unit for e in es], pa.float64()),
        }
    )


def utility_table(w: _World, docs: pa.Table, publisher_classes: bool = False) -> pa.Table:
    """One row per (family, event type, horizon): planted and empirical P(tone == dir_h). With
    ``publisher_classes`` (world.publisher_utility) also one per news publisher class
    ("news:wire", "news:opinion", "news:aggregator", the families of memory.families = "fine")."""
    dirs = {e.event_id: e.dirs for e in w.events}
    fam = docs.column("source_family").to_pylist()
    use = docs.column("in_utility").to_pylist()
    eid = docs.column("event_id").to_pylist()
    et = docs.column("event_type").to_pylist()
    tone = docs.column("tone").to_pylist()
    rows = []
    for s in P.FAMILIES:
        for c in P.EVENT_TYPES:
            idx = [i for i in range(len(fam)) if use[i] and fam[i] == s and et[i] == c]
            for hi, h in enumerate(P.HORIZONS):
                agree = [tone[i] == dirs[eid[i]][hi] for i in idx]
                tp = P.TYPE_PARAMS[c]
                rows.append(
                    (
                        s,
                        c,
                        h,
                        P.planted_utility(s, c, h),
                        float(np.mean(agree)) if agree else None,
                        len(idx),
                        len({eid[i] for i in idx}),
                        tp.rho_news if s == "news" else tp.rho_sec,
                        "d_short" if s == "news" else "d_long",
                    )
                )
    if publisher_classes:
        news = [r for r in w.news if r.in_utility]
        for k in P.PUBLISHER_CLASSES:
            for c in P.EVENT_TYPES:
                rs = [r for r in news if r.event_type == c and P.PUBLISHER_CLASS[r.publisher] == k]
                for hi, h in enumerate(P.HORIZONS):
                    agree = [r.tone == dirs[r.event_id][hi] for r in rs]
                    rel = P.class_reliability(k, P.TYPE_PARAMS[c].rho_news)
                    rows.append(
                        (
                            f"news:{k}",
                            c,
                            h,
                            P.planted_class_utility(k, c, h),
                            float(np.mean(agree)) if agree else None,
                            len(rs),
                            len({r.event_id for r in rs}),
                            rel,
                            "d_short",
                        )
                    )
    cols = list(zip(*rows))
    return pa.table(
        {
            "source_family": pa.array(cols[0], pa.string()),
            "event_type": pa.array(cols[1], pa.string()),
            "horizon": pa.array(cols[2], pa.int8()),
            "planted_prob": pa.array(cols[3], pa.float64()),
            "empirical_rate": pa.array(cols[4], pa.float64()),
            "n_docs": pa.array(cols[5], pa.int64()),
            "n_events": pa.array(cols[6], pa.int64()),
            "reliability": pa.array(cols[7], pa.float64()),
            "tone_target": pa.array(cols[8], pa.string()),
        }
    )


def prices_truth_table(w: _World) -> pa.Table:
    tickers, dates, regime, comps = (
        [],
        [],
        [],
        {k: [] for k in ("r_market", "r_sector", "r_idio", "r_alpha", "r_abnormal", "r_total", "dividend", "close", "adj_close")},
    )
    ids = []
    days = np.array(w.wd.days, dtype="datetime64[D]")
    for t in sorted(w.prices):
        p = w.prices[t]
        n = len(days)
        tickers.append(np.full(n, t, dtype=object))
        dates.append(days)
        regime.append(w.params["regime"])
        for k in comps:
            comps[k].append(getattr(p, k))
        ids.append(w.event_price_ids[t])
    cat = np.concatenate
    eids = cat(ids)
    return pa.table(
        {
            "ticker": pa.array(cat(tickers), pa.string()),
            "date": pa.array(cat(dates), pa.date32()),
            "regime": pa.array(cat(regime), pa.int8()),
            **{k: pa.array(cat(v), pa.float64()) for k, v in comps.items()},
            "event_id": pa.array([x if x else None for x in eids], pa.string()),
        }
    )


def _settings_doc(s: WorldSettings) -> dict:
    """The settings as world.json records them; publisher_utility only when on, so that the default
    world's truth files keep the bytes they had before the setting existed."""
    d = json.loads(s.model_dump_json())
    if not s.publisher_utility:
        d.pop("publisher_utility")
    return d


def settings_stamp(s: WorldSettings) -> str:
    """The text of ``<world>/world_settings.json``, by which a built world is reused: the default
    world keeps the stamp it had before publisher_utility existed (no rebuild of existing lakes)."""
    return json.dumps(_settings_doc(s), sort_keys=True)


def world_json(w: _World, s: WorldSettings, counts: dict, files: dict[str, str]) -> str:
    doc = {
        "synthetic": True,
        "disclaimer": DISCLAIMER,
        "seed": s.seed,
        "settings": _settings_doc(s),
        "span": {"first_day": w.wd.days[0].isoformat(), "last_day": w.wd.days[-1].isoformat(), "sessions": len(w.wd)},
        "universe": [
            {
                "ticker": c.ticker,
                "company": c.company,
                "cik": c.cik,
                "sector": c.sector,
                "sub_industry": c.sub_industry,
                "fiscal_year_end": c.fiscal_year_end,
                **{k: round(v, 10) for k, v in w.params["stocks"].get(c.ticker, {}).items()},
            }
            for c in w.companies
        ],
        "model": {
            "event_types": {c: {k: getattr(tp, k) for k in tp.__dataclass_fields__} for c, tp in P.TYPE_PARAMS.items()},
            "jump_range_u": P.JUMP_RANGE,
            "cont_drift_range_u": P.CONT_DRIFT_RANGE,
            "rev_drift_range_u": P.REV_DRIFT_RANGE,
            "delay_drift_range_u": P.DELAY_DRIFT_RANGE,
            "drift_days": P.DRIFT_DAYS,
            "regime_stay": P.REGIME_STAY,
            "market_mu": P.MARKET_MU,
            "market_vol": P.MARKET_VOL,
            "idio_vol_range": P.IDIO_VOL_RANGE,
            "idio_scale": P.IDIO_SCALE,
            "sector_vol_range": P.SECTOR_VOL_RANGE,
            "sector_scale": P.SECTOR_SCALE,
            "beta_range": P.BETA_RANGE,
            "gamma_range": P.GAMMA_RANGE,
            "buckets": P.BUCKETS,
            "earnings_bucket_p": P.EARNINGS_BUCKET_P,
            "other_bucket_p": P.OTHER_BUCKET_P,
            "min_event_spacing_sessions": P.MIN_EVENT_SPACING,
        },
        "planted_utility": {f"{f}|{c}|{h}": round(P.planted_utility(f, c, h), 12) for f in P.FAMILIES for c in P.EVENT_TYPES for h in P.HORIZONS},
        "counts": counts,
        "files_sha256": files,
    }
    return json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n"


def generate_world(settings: WorldSettings, out_dir: Path) -> WorldManifest:
    """Generate the world for ``settings`` under ``out_dir`` (``raw/`` and ``truth/``).

    Files are built in ``out_dir/.tmp-<seed>`` and then moved into place, replacing any
    previous ``raw/`` and ``truth/``. Same settings -> byte-identical files.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    w = build_world(settings)
    # a folder of this process's own, so two builds at once never write into each other's files
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{settings.seed}-", dir=out_dir))
    raw, truth = tmp / "raw", tmp / "truth"
    counts = write_raw(w, raw, settings.news_end)
    docs = documents_table(w)
    _write_parquet(truth / "documents.parquet", docs)
    _write_parquet(truth / "events.parquet", events_table(w))
    _write_parquet(truth / "source_utility.parquet", utility_table(w, docs, settings.publisher_utility))
    _write_parquet(truth / "prices_truth.parquet", prices_truth_table(w))
    counts.update({"events": len(w.events), "documents": docs.num_rows, "tickers": len(w.companies)})
    files = {p.relative_to(tmp).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(raw.rglob("*")) if p.is_file()}
    _write_text(truth / "world.json", world_json(w, settings, counts, files))
    with FileLock(str(out_dir / ".world.lock")):  # one swap at a time; the last build wins whole
        for name in ("raw", "truth"):
            dst = out_dir / name
            if dst.exists():
                dst.rename(tmp / f"old-{name}")
            (tmp / name).rename(dst)
    shutil.rmtree(tmp)
    return WorldManifest(
        out_dir=out_dir,
        seed=settings.seed,
        tickers=tuple(c.ticker for c in w.companies),
        n_events=len(w.events),
        n_news_rows=counts["news_rows"],
        n_price_rows=counts["price_rows"],
        n_filings=counts["filings"],
        n_documents=docs.num_rows,
    )
