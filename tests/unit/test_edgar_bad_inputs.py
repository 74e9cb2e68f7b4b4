"""EDGAR and price inputs that lie about time or identity: a date-only acceptance time, one accession
listed twice in a submissions JSON, and a market proxy without a price file (docs/bad_inputs.md)."""

import datetime as dt
import json
import shutil
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.settings import Settings
from finrag_dagster.sources import edgar
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.edgar import load_filings
from finrag_dagster.sources.registry import load_table, load_universe_frame
from finrag_dagster.sources.rowcount import filing_records

DATA = Path(__file__).resolve().parents[1] / "data"
GOOD_JSON = DATA / "edgar_fetch" / "data.sec.gov" / "submissions" / "CIK0000320193.json"
PRICES = DATA / "bad" / "prices" / "missing_session"  # real aapl.csv and qqq.csv, 2021-01-29 .. 2021-03-26
UNIVERSE = pl.DataFrame({"ticker": ["AAPL"], "cik": [320193]})
ACC = "0000320193-23-000077"  # a 10-Q of the real file, accepted 2023-08-03T22:04:43.000Z, filed 2023-08-04


def _json(tmp_path: Path, edit) -> Path:
    doc = json.loads(GOOD_JSON.read_text())
    edit(doc["filings"]["recent"])
    f = tmp_path / "CIK0000320193.json"
    f.write_text(json.dumps(doc))
    return f


def _row(res, acc: str) -> dict:
    return next(r for r in res.accepted.iter_rows(named=True) if r["accession"] == acc)


# ---------------------------------------------------------------- a date-only acceptance time
def test_a_date_only_acceptance_is_public_at_the_end_of_its_day_and_flagged(tmp_path):
    """An acceptance time of "2021-12-15" read as 00:00 UTC (19:00 New York the day before) decided the filing on the 15th's
    session, though it may have been accepted after that close: a session of look-ahead. As a
    date-only news stamp, it is public at 23:59:59 New York of that day: decided on the 16th."""

    def edit(rec):
        i = rec["accessionNumber"].index(ACC)
        rec["acceptanceDateTime"][i], rec["filingDate"][i] = "2021-12-15", "2021-12-15"

    res = load_filings([_json(tmp_path, edit)], [], UNIVERSE)
    row = _row(res, ACC)
    assert pd.Timestamp(row["public_time"]) == pd.Timestamp("2021-12-15 23:59:59", tz="America/New_York")
    assert row["date"] == dt.date(2021, 12, 16)  # Wednesday's date -> Thursday's session, never Wednesday's
    assert nyse().decision_days([pd.Timestamp("2021-12-15", tz="UTC").value])[0] == pd.Timestamp("2021-12-15")  # what midnight gave
    (flag,) = res.flags.filter(pl.col("flag") == edgar.F_DATE_ONLY).iter_rows(named=True)
    assert (flag["source_file"], flag["source_row"], flag["ticker"], flag["date"]) == ("CIK0000320193.json", 9, "AAPL", dt.date(2021, 12, 16))
    assert "'2021-12-15'" in flag["detail"] and ACC in flag["detail"] and "2021-12-16" in flag["detail"]
    assert res.rows_in == res.accepted.height + res.quarantine.height


def test_a_friday_date_only_acceptance_is_decided_on_monday(tmp_path):
    def edit(rec):
        i = rec["accessionNumber"].index(ACC)
        rec["acceptanceDateTime"][i] = "2023-08-04"  # its filing date, a Friday

    row = _row(load_filings([_json(tmp_path, edit)], [], UNIVERSE), ACC)
    assert row["date"] == dt.date(2023, 8, 7)


def test_with_a_header_time_the_latest_time_still_decides_and_only_a_deciding_date_is_flagged(tmp_path):
    """Clean stamps raise no flag. With the SGML header's 18:03:52 New York time of 0000320193-23-000064,
    a date-only JSON time of that day (its end, 23:59:59) is the latest and is flagged; a date-only
    time of the day before loses to the header's and is not."""
    assert load_filings([GOOD_JSON], [], UNIVERSE).flags.height == 0
    header = DATA / "bad" / "edgar" / "sec-edgar-filings" / "AAPL" / "10-Q" / "0000320193-23-000064"
    for day, public, flagged in (("2023-05-04", "2023-05-04 23:59:59", 1), ("2023-05-03", "2023-05-04 18:03:52", 0)):

        def edit(rec, day=day):
            rec["acceptanceDateTime"][rec["accessionNumber"].index("0000320193-23-000064")] = day

        res = load_filings([_json(tmp_path, edit), header], [], UNIVERSE)
        row = _row(res, "0000320193-23-000064")
        assert pd.Timestamp(row["public_time"]) == pd.Timestamp(public, tz="America/New_York")
        assert row["date"] == dt.date(2023, 5, 5)
        assert res.flags.filter(pl.col("flag") == edgar.F_DATE_ONLY).height == flagged


def test_a_date_only_acceptance_in_an_index_parquet_is_read_the_same_way(tmp_path):
    f = tmp_path / "filings_index.parquet"
    pl.DataFrame(
        {
            "accession": [ACC],
            "form_type": ["10-Q"],
            "cik": [320193],
            "ticker": ["AAPL"],
            "company": ["Apple Inc."],
            "acceptance_datetime_utc": ["2021-12-15"],
            "filed_date": [dt.date(2021, 12, 15)],
        }
    ).write_parquet(f)
    res = load_filings([f], [], UNIVERSE)
    assert res.accepted["date"].to_list() == [dt.date(2021, 12, 16)]
    assert res.flags["flag"].to_list() == [edgar.F_DATE_ONLY]


# ---------------------------------------------------------------- one accession listed twice
def _twice(tmp_path: Path, second_time: str) -> Path:
    def edit(rec):
        i = rec["accessionNumber"].index(ACC)
        for k, v in rec.items():
            v.append(v[i])
        rec["acceptanceDateTime"][-1] = second_time

    return _json(tmp_path, edit)


def test_an_accession_listed_twice_keeps_the_later_time_and_quarantines_the_other(tmp_path):
    f = _twice(tmp_path, "2023-08-03T12:00:00.000Z")  # the same day, hours earlier: would decide it on the 3rd
    entries = len(json.loads(f.read_text())["filings"]["recent"]["accessionNumber"])  # 13 records, read by json
    res = load_filings([f], [], UNIVERSE)
    row = _row(res, ACC)
    assert pd.Timestamp(row["public_time"]) == pd.Timestamp("2023-08-03T22:04:43Z")
    assert row["date"] == dt.date(2023, 8, 4)
    q = res.quarantine.filter(pl.col("reason").str.starts_with(edgar.R_DUPLICATE))
    assert q.height == 1 and q["source_row"].to_list() == [12]
    assert q["reason"][0] == (
        f"{edgar.R_DUPLICATE}: {ACC} at rows 9 and 12 of CIK0000320193.json, acceptance times 2023-08-03T22:04:43+00:00 (row 9) "
        "and 2023-08-03T12:00:00+00:00 (row 12): row 9, the later, is kept, so no decision sees the filing early"
    )
    assert res.rows_in == entries == res.accepted.height + res.quarantine.height
    assert filing_records([f], []) == entries  # the asset check's count, without the loader, agrees


def test_the_later_entry_is_kept_wherever_it_stands(tmp_path):
    f = _twice(tmp_path, "2023-08-04T14:00:00.000Z")  # the second entry is the later one
    res = load_filings([f], [], UNIVERSE)
    assert pd.Timestamp(_row(res, ACC)["public_time"]) == pd.Timestamp("2023-08-04T14:00:00Z")
    q = res.quarantine.filter(pl.col("reason").str.starts_with(edgar.R_DUPLICATE))
    assert q["source_row"].to_list() == [9] and "row 12, the later, is kept" in q["reason"][0]
    assert res.rows_in == 13 == res.accepted.height + res.quarantine.height


def test_an_exact_repeat_is_quarantined_too_and_the_first_kept(tmp_path):
    res = load_filings([_twice(tmp_path, "2023-08-03T22:04:43.000Z")], [], UNIVERSE)
    q = res.quarantine.filter(pl.col("reason").str.starts_with(edgar.R_DUPLICATE))
    assert q["source_row"].to_list() == [12]
    assert q["reason"][0].endswith("the same acceptance time 2023-08-03T22:04:43+00:00: row 9 is kept")
    assert res.rows_in == 13 == res.accepted.height + res.quarantine.height


def test_an_index_parquet_may_give_one_filing_per_source(tmp_path):
    """The real index parquet has a row per acceptance source (and per share class) of a filing: not a duplicate."""
    res = load_filings([DATA / "real" / "filings" / "filings_index.parquet"], [], pl.read_csv(DATA / "real" / "universe" / "tickers.csv"))
    assert res.quarantine.filter(pl.col("reason").str.starts_with(edgar.R_DUPLICATE)).height == 0


# ---------------------------------------------------------------- the market proxy's prices
def _settings(tmp_path: Path, files: list[str]) -> Settings:
    prices = tmp_path / "prices"
    prices.mkdir()
    for name in files:
        shutil.copy(PRICES / name, prices / name)
    (tmp_path / "tickers.csv").write_text("ticker,cik\nAAPL,320193\n")
    return Settings(
        lake_dir=tmp_path / "lake",
        sources={"kind": "files", "universe": str(tmp_path / "tickers.csv"), "prices": [str(prices / "*.csv")], "market_ticker": "QQQ"},
    )


def test_a_missing_market_price_file_stops_the_prices_load(tmp_path):
    s = _settings(tmp_path, ["aapl.csv"])
    with pytest.raises(SourceError) as e:
        load_table(s, "prices", load_universe_frame(s))
    msg = str(e.value)
    assert msg.startswith("no prices for the market proxy QQQ (market_ticker): no configured price file has a bar for it")
    assert str(tmp_path / "prices" / "qqq.csv") in msg and len(msg) < 400


def test_a_market_file_whose_rows_are_all_quarantined_stops_it_too(tmp_path):
    s = _settings(tmp_path, ["aapl.csv"])
    lines = (PRICES / "qqq.csv").read_text().splitlines()
    bad = [lines[0]] + [",".join(ln.split(",")[:5] + ["0", ln.split(",")[6]]) for ln in lines[1:] if ln]  # Adj Close 0
    (tmp_path / "prices" / "qqq.csv").write_text("\n".join(bad) + "\n")
    with pytest.raises(
        SourceError, match=r"market proxy QQQ .*all 40 of its rows were quarantined \(most: 'missing, NaN or non-positive adj_close'\)"
    ):
        load_table(s, "prices", load_universe_frame(s))


def test_with_the_market_file_the_load_passes(tmp_path):
    s = _settings(tmp_path, ["aapl.csv", "qqq.csv"])
    res = load_table(s, "prices", load_universe_frame(s))
    assert set(res.accepted["ticker"]) == {"AAPL", "QQQ"}


# ---------------------------------------------------------------- encodings and fields given twice
SGML_006 = DATA / "bad" / "edgar" / "sec-edgar-filings" / "AAPL" / "10-Q" / "0000320193-23-000006" / "full-submission.txt"


def test_a_latin1_json_is_refused_naming_the_encoding_and_a_bom_is_read(tmp_path):
    doc = json.loads(GOOD_JSON.read_text())
    doc["description"] = "Société"
    f = tmp_path / "CIK0000320193.json"
    f.write_bytes(json.dumps(doc, ensure_ascii=False).encode("latin-1"))
    with pytest.raises(SourceError) as e:
        load_filings([f], [], UNIVERSE)
    assert str(e.value).startswith("CIK0000320193.json: not UTF-8 text (byte 0xe9 at offset ") and "save it as UTF-8" in str(e.value)
    clean = load_filings([GOOD_JSON], [], UNIVERSE).accepted
    for enc in ("utf-8-sig", "utf-16"):
        f.write_bytes(json.dumps(doc, ensure_ascii=False).encode(enc))
        assert load_filings([f], [], UNIVERSE).accepted.equals(clean)
        assert filing_records([f], []) == filing_records([GOOD_JSON], [])  # the independent count reads it too


def test_a_json_key_given_twice_with_different_values_is_refused(tmp_path):
    text = GOOD_JSON.read_text()
    f = tmp_path / "CIK0000320193.json"
    f.write_text(text.replace('"filings":{"recent":{', '"filings":{"recent":{"form":["8-K"],', 1))
    with pytest.raises(SourceError, match=r"^CIK0000320193.json: key 'form' given twice with different values"):
        load_filings([f], [], UNIVERSE)


def test_a_utf16_or_cr_only_submission_reads_as_the_clean_one_and_a_field_given_twice_quarantines_it(tmp_path):
    folder = tmp_path / "AAPL" / "10-Q" / "0000320193-23-000006"
    folder.mkdir(parents=True)
    f = folder / "full-submission.txt"
    text = SGML_006.read_text()
    clean = load_filings([SGML_006], [], UNIVERSE).accepted
    for data in (text.encode("utf-16"), text.replace("\n", "\r").encode(), b"\xef\xbb\xbf" + text.encode()):
        f.write_bytes(data)  # UTF-16 has NUL bytes: read as its BOM says, never "a binary or corrupt file"
        assert load_filings([f], [], UNIVERSE).accepted.equals(clean)
        assert filing_records([], [f]) == 1  # the asset check's count, without the loader, agrees
    f.write_text(text.replace("CONFORMED SUBMISSION TYPE:\t10-Q\n", "CONFORMED SUBMISSION TYPE:\t10-Q\nCONFORMED SUBMISSION TYPE:\t8-K\n"))
    res = load_filings([f], [], UNIVERSE)
    assert res.accepted.height == 0 and res.quarantine["reason"].to_list() == [
        f"{edgar.R_HEADER_TWICE}: CONFORMED SUBMISSION TYPE (10-Q, 8-K) in 0000320193-23-000006/full-submission.txt (re-download it)"
    ]
