"""Query periods on each company's own fiscal calendar, as known at the as-of time."""

import datetime as dt

import polars as pl

from finrag_dagster.core.retrieval.engine import apply_fiscal
from finrag_dagster.core.retrieval.fiscal import calendars
from finrag_dagster.core.retrieval.names import NameIndex
from finrag_dagster.core.retrieval.query import parse_query
from finrag_dagster.core.retrieval.search import structured_sql

NAMES = NameIndex.from_aliases({"MRVL": ["marvell technology", "marvell"], "AAPL": ["apple inc.", "apple"], "INTC": ["intel"]})


def _t(day: str) -> dt.datetime:
    return dt.datetime.combine(dt.date.fromisoformat(day), dt.time(21), tzinfo=dt.timezone.utc)


# Marvell: fiscal years end on the Saturday nearest January 31; Apple: the last Saturday of September.
FILINGS = pl.DataFrame(
    [
        ("MRVL", "10-K", _t("2021-03-12"), dt.date(2021, 1, 30), "FY2021"),
        ("MRVL", "10-Q", _t("2021-12-03"), dt.date(2021, 10, 30), "Q3 2022"),
        ("MRVL", "10-K", _t("2022-03-10"), dt.date(2022, 1, 29), "FY2022"),
        ("MRVL", "10-Q", _t("2022-06-03"), dt.date(2022, 4, 30), "Q1 2023"),
        ("MRVL", "10-Q", _t("2022-09-02"), dt.date(2022, 7, 30), "Q2 2023"),
        ("MRVL", "10-Q", _t("2022-12-02"), dt.date(2022, 10, 29), "Q3 2023"),
        ("AAPL", "10-K", _t("2021-10-29"), dt.date(2021, 9, 25), "FY2021"),
        ("AAPL", "10-Q", _t("2022-07-29"), dt.date(2022, 6, 25), "Q3 2022"),
    ],
    schema={"ticker": pl.Utf8, "form_type": pl.Utf8, "public_time": pl.Datetime("us", "UTC"), "report_date": pl.Date, "fiscal_period": pl.Utf8},
    orient="row",
)


def _parsed(text: str, as_of: str):
    day = dt.date.fromisoformat(as_of)
    q = parse_query(text, NAMES, day)
    ns = int(_t(as_of).timestamp()) * 10**9
    apply_fiscal(q, calendars(FILINGS, q.tickers, ns), day)
    return q


def test_a_fiscal_quarter_lands_on_its_filing_and_news_window():
    q = _parsed("Marvell Q3 FY2023 data center revenue", "2022-12-31")
    assert q.periods == ["Q3 2023"]
    assert q.period_windows == [(["MRVL"], dt.date(2022, 7, 31), dt.date(2022, 12, 28))]  # the 10-Q's own dates + 60 days
    assert "fiscal year ends in month 1" in q.notes[0] and "2022-07-31 .. 2022-10-29" in q.notes[0]
    sql, params = structured_sql(q, 50)
    assert "fiscal_period IN ($p0)" in sql and params["p0"] == "Q3 2023"
    # the company's news in the window gets the period boost in the rerank; news outside it does not
    import numpy as np

    from finrag_dagster.core.retrieval.search import SearchConfig, SearchIndex, run_search

    emb = np.eye(3, 384, dtype=np.float32)
    ev = pl.DataFrame(
        {
            "passage_id": ["in", "out", "f"],
            "ticker": ["MRVL"] * 3,
            "source_family": ["news", "news", "sec_filing"],
            "public_time": [_t("2022-12-01"), _t("2022-05-02"), _t("2022-12-02")],
            "form_type": [None, None, "10-Q"],
            "item": [None] * 3,
            "fiscal_period": [None, None, "Q3 2023"],
            "title": ["a", "b", "c"],
            "text": ["marvell data center revenue"] * 3,
            "url": ["u1", "u2", "u3"],
            "embedding": pl.Series(emb, dtype=pl.Array(pl.Float32, 384)),
        },
        schema_overrides={"public_time": pl.Datetime("us", "UTC"), "form_type": pl.Utf8, "item": pl.Utf8, "fiscal_period": pl.Utf8},
    )
    res = run_search(SearchIndex(ev, int(_t("2022-12-31").timestamp()) * 10**9), q, emb[0], ["f"], SearchConfig(k=3), "full")
    comp = {h.passage_id: h.components for h in res.hits}
    assert comp["in"].get("period_window") == 1.0 and "period_window" not in comp["out"] and comp["f"].get("period_match") == 1.0


def test_a_quarter_without_a_year_is_the_latest_one_ended_before_as_of():
    assert _parsed("Marvell's third quarter", "2022-12-31").periods == ["Q3 2023"]
    assert _parsed("Marvell's third quarter", "2022-10-15").periods == ["Q3 2022"]  # Q3 FY2023 had not ended


def test_the_calendar_is_what_was_known_at_as_of():
    early = _parsed("Marvell Q3 FY2022", "2021-02-01")  # before any 10-K in the lake
    assert "calendar quarters" in early.notes[0]
    assert early.period_windows[0][1:] == (dt.date(2022, 7, 1), dt.date(2022, 11, 29))  # calendar Q3 2022 + 60 days
    later = _parsed("Marvell Q3 FY2022", "2021-06-01")  # the FY2021 10-K (accepted 2021-03-12) is known
    assert later.period_windows[0][1:] == (dt.date(2021, 8, 1), dt.date(2021, 12, 30))  # Aug-Oct 2021, month ends


def test_each_company_reads_the_period_on_its_own_calendar():
    q = _parsed("Compare Apple and Intel Q3 2022 revenue", "2022-12-31")
    win = {tuple(ts): (lo, hi) for ts, lo, hi in q.period_windows}
    # Apple's fiscal Q3 2022: April-June (the end from its 10-Q, the start counted from month ends)
    assert win[("AAPL",)] == (dt.date(2022, 4, 1), dt.date(2022, 6, 25) + dt.timedelta(days=60))
    assert win[("INTC",)][0] == dt.date(2022, 7, 1)  # no 10-K known for Intel here: calendar Q3
    assert len(q.notes) == 2 and q.notes[0].startswith("AAPL Q3 2022")


def test_a_query_naming_no_company_keeps_plain_labels():
    q = parse_query("gross margin Q3 2022", NAMES, dt.date(2022, 12, 31))
    assert q.periods == ["Q3 2022"] and q.period_windows == [] and q.notes == []
