"""EDGAR loader: SGML headers (US/Eastern), submissions JSON (UTC), sample parquets, passages.

The real EDGAR files in tests/data/real are the development sample's, copied whole (PROVENANCE.md).
"""

import datetime as dt
import json
import re
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

from finrag_dagster.core.storage.schemas import FILINGS_RAW
from finrag_dagster.sources import edgar
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.edgar import (
    fiscal_period,
    load_filings,
    parse_submission_header,
    period_in_text,
    split_filing_passages,
)
from finrag_dagster.sources.rowcount import filing_records
from finrag_dagster.sources.universe import load_universe

UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def uni(real_data):
    return load_universe(real_data / "universe" / "tickers.csv")


@pytest.fixture(scope="module")
def index_result(real_data, uni):
    return load_filings([real_data / "filings" / "filings_index.parquet"], [], uni)


@pytest.fixture(scope="module")
def text_result(real_data, uni):
    return load_filings([], [real_data / "filings" / "filings_text.parquet"], uni)


@pytest.fixture(scope="module")
def apple_texts(text_result):
    return {r["form_type"]: r for r in text_result.accepted.iter_rows(named=True)}


# ---------------------------------------------------------------- headers and time
def test_parse_header_converts_eastern_acceptance_to_utc(real_data):
    f = real_data / "raw/sec-edgar-filings/AAPL/10-Q/0000320193-23-000006/full-submission.txt"
    h = parse_submission_header(f.read_text())
    assert h["accession"] == "0000320193-23-000006"
    assert h["form_type"] == "10-Q"
    assert h["acceptance_utc"] == pd.Timestamp("2023-02-02 23:01:30", tz="UTC")  # 18:01:30 ET
    assert h["period_of_report"] == dt.date(2022, 12, 31)
    assert h["filed_date"] == dt.date(2023, 2, 3)
    assert h["cik"] == 320193 and h["company"] == "Apple Inc."
    assert h["fiscal_year_end"] == "0930"
    assert h["items"] == ""


def test_header_folder_rows_use_acceptance_not_filing_date(real_data, uni):
    r = load_filings([real_data / "raw" / "sec-edgar-filings"], [], uni)
    assert r.rows_in == 12 and r.accepted.height == 12
    acc = {row["accession"]: row for row in r.accepted.iter_rows(named=True)}
    q = acc["0000320193-23-000006"]
    assert q["public_time"] == dt.datetime(2023, 2, 2, 23, 1, 30, tzinfo=UTC)
    assert q["date"] == dt.date(2023, 2, 3)  # after the 2 Feb close
    assert q["acceptance_source"] == "sgml_header"
    assert q["ticker"] == "AAPL" and q["text"] == ""  # 1,000-byte header files: no body
    assert q["fiscal_period"] == "Q1 2023"
    # 06:01:36 ET, before the open -> same day
    k = acc["0000320193-24-000123"]
    assert k["public_time"] == dt.datetime(2024, 11, 1, 10, 1, 36, tzinfo=UTC)
    assert k["date"] == dt.date(2024, 11, 1) and k["fiscal_period"] == "FY2024"
    assert r.accepted.columns == FILINGS_RAW.schema.names + ["date"]


def test_json_and_header_acceptance_times_agree(real_data, uni):
    j = load_filings([real_data / "raw/sec_submissions/CIK0000320193.json"], [], uni).accepted
    h = load_filings([real_data / "raw/sec-edgar-filings"], [], uni).accepted
    both = j.join(h, on="accession", suffix="_h")
    assert both.height == 12
    assert (both["public_time"] == both["public_time_h"]).all()
    assert (both["date"] == both["date_h"]).all()
    # the sample index: 12 filings carry both a JSON and a header time, identical to the second
    idx = pl.read_parquet(real_data / "filings" / "filings_index.parquet")
    pairs = (
        idx.group_by("accession")
        .agg(pl.col("acceptance_source").n_unique().alias("n"), pl.col("acceptance_datetime_utc").n_unique().alias("t"))
        .filter(pl.col("n") == 2)
    )
    assert pairs.height == 12 and (pairs["t"] == 1).all()


def test_submissions_json_counts(real_data, uni):
    r = load_filings([real_data / "raw/sec_submissions/CIK0000320193.json"], [], uni)
    assert r.rows_in == 2236
    reasons = dict(r.quarantine.group_by("reason").len().iter_rows())
    assert reasons == {edgar.R_FORM: 1871, edgar.R_OUT_OF_CALENDAR: 40}  # forms 4, S-8, ...; 1990s filings
    assert r.accepted.height == 325
    assert set(r.accepted["form_type"]) <= set(edgar.FORMS_USED)
    assert (r.accepted["acceptance_source"] == "submissions_json").all()
    k = r.accepted.filter(pl.col("accession") == "0000320193-23-000106").row(0, named=True)
    assert k["fiscal_period"] == "FY2023" and k["report_date"] == dt.date(2023, 9, 30)
    eight_k = r.accepted.filter(pl.col("accession") == "0000320193-18-000005").row(0, named=True)
    assert eight_k["items"] == "2.02,9.01" and eight_k["fiscal_period"] is None  # no text, no period


def test_sample_index_parquet(index_result):
    r = index_result
    assert r.rows_in == 765  # 781 rows; 16 accessions listed twice (12 JSON + header, 4 GOOG + GOOGL)
    assert r.accepted.height == 765 and r.quarantine.height == 0
    acc = {row["accession"]: row for row in r.accepted.iter_rows(named=True)}
    assert acc["0000320193-23-000006"]["acceptance_source"] == "sgml_header|submissions_json"
    # one CIK, two tickers (GOOG/GOOGL) in the universe and in the sources: one row, sorted first
    assert acc["0001652044-23-000045"]["ticker"] == "GOOG"
    # fiscal periods follow each company's fiscal year
    assert acc["0000320193-23-000006"]["fiscal_period"] == "Q1 2023"  # Apple, FY ends September
    msft = r.accepted.filter((pl.col("ticker") == "MSFT") & (pl.col("report_date") == dt.date(2020, 12, 31)))
    assert msft.filter(pl.col("form_type") == "10-Q")["fiscal_period"].to_list() == ["Q2 2021"]  # FY ends June
    msft_k = r.accepted.filter((pl.col("ticker") == "MSFT") & (pl.col("form_type") == "10-K"))
    assert set(msft_k["fiscal_period"]) == {f"FY{y}" for y in range(2018, 2024)}


def test_sources_merge_into_one_row_per_accession(real_data, uni):
    index = [real_data / "filings" / "filings_index.parquet", real_data / "raw/sec_submissions/CIK0000320193.json"]
    texts = [real_data / "raw" / "sec-edgar-filings", real_data / "filings" / "filings_text.parquet"]
    r = load_filings(index, texts, uni)
    again = load_filings(list(reversed(index)), list(reversed(texts)), uni)
    assert r.accepted.equals(again.accepted) and r.quarantine.equals(again.quarantine)  # order-free, deterministic
    assert r.accepted["accession"].is_unique().all()
    assert r.accepted.sort("public_time", "accession").equals(r.accepted)
    k = r.accepted.filter(pl.col("accession") == "0000320193-24-000123").row(0, named=True)
    assert k["acceptance_source"] == "sgml_header|submissions_json|submissions_json_matched"
    assert len(k["text"]) > 100_000 and k["fiscal_period"] == "FY2024"
    assert "filings_text.parquet" in k["source_file"]


BAD_EDGAR = Path(__file__).resolve().parents[1] / "data" / "bad" / "edgar"


@pytest.mark.parametrize(
    "index, texts, want",
    [
        (["filings/filings_index.parquet"], [], 765),  # 781 rows, 16 accessions listed twice
        ([], ["filings/filings_text.parquet"], 3),  # 39 section rows of three filings
        (["raw/sec-edgar-filings"], [], 12),
        (["raw/sec_submissions/CIK0000320193.json"], [], 2236),
        # the 12 headers and the 3 texts are filings the index and the JSON already list
        (
            ["filings/filings_index.parquet", "raw/sec_submissions/CIK0000320193.json"],
            ["raw/sec-edgar-filings", "filings/filings_text.parquet"],
            2928,
        ),
        ([BAD_EDGAR / "short_arrays/CIK0000320193.json"], [], 12),  # arrays that do not line up: 12 rows alone
        ([BAD_EDGAR / "sec-edgar-filings"], [BAD_EDGAR / "sec-edgar-filings"], 3),  # one of them corrupt
    ],
)
def test_filings_counted_without_the_loader_equal_rows_in(real_data, uni, index, texts, want):
    """The rows_reconcile check's count from the files (accession numbers read with json/pyarrow/bytes,
    not the loader) equals the loader's rows_in on real files, merged sources and bad inputs alike."""
    index, texts = [real_data / p for p in index], [real_data / p for p in texts]
    assert filing_records(index, texts) == want
    assert load_filings(index, texts, uni).rows_in == want


def test_latest_acceptance_time_wins(tmp_path, uni):
    acc = "0000320193-23-000006"
    sub = {
        "cik": "0000320193",
        "name": "Apple Inc.",
        "tickers": ["AAPL"],
        "fiscalYearEnd": "0930",
        "filings": {
            "recent": {
                "accessionNumber": [acc],
                "form": ["10-Q"],
                "acceptanceDateTime": ["2023-02-02T23:00:30.000Z"],
                "filingDate": ["2023-02-03"],
                "reportDate": ["2022-12-31"],
                "items": [""],
            }
        },
    }
    (tmp_path / "CIK0000320193.json").write_text(json.dumps(sub))
    d = tmp_path / "dl" / "AAPL" / "10-Q" / acc
    d.mkdir(parents=True)
    d.joinpath("full-submission.txt").write_text(
        f"<SEC-HEADER>\n<ACCEPTANCE-DATETIME>20230202180130\nACCESSION NUMBER:\t{acc}\n"
        "CONFORMED SUBMISSION TYPE:\t10-Q\nCENTRAL INDEX KEY:\t0000320193\n</SEC-HEADER>\n"
    )
    r = load_filings([tmp_path / "*.json", tmp_path / "dl"], [], uni)
    assert r.rows_in == 1
    row = r.accepted.row(0, named=True)
    assert row["public_time"] == dt.datetime(2023, 2, 2, 23, 1, 30, tzinfo=UTC)  # header is 60 s later
    assert row["acceptance_source"] == "sgml_header|submissions_json"


# ---------------------------------------------------------------- malformed input
def test_malformed_filings_go_to_quarantine(tmp_path, uni):
    sub = {
        "cik": "0000320193",
        "name": "Apple Inc.",
        "tickers": ["AAPL"],
        "filings": {
            "recent": {
                "accessionNumber": ["0000320193-21-000001", "0000320193-21-000002", "0000320193-21-000003", ""],
                "form": ["S-8", "10-Q", "8-K", "8-K"],
                "acceptanceDateTime": ["2021-01-04T21:00:00.000Z", "", "2021-01-05T12:00:00.000Z", "2021-01-05T12:00:00.000Z"],
                "filingDate": ["2021-01-04", "2021-01-04", "2021-01-05", "2021-01-05"],
                "reportDate": [""] * 4,
                "items": ["", "", "8.01", "8.01"],
            }
        },
    }
    (tmp_path / "CIK0000320193.json").write_text(json.dumps(sub))
    other = {
        "cik": "0000000042",
        "name": "Nobody Inc.",
        "tickers": ["NOPE"],
        "filings": {
            "recent": {
                "accessionNumber": ["0000000042-21-000001"],
                "form": ["8-K"],
                "acceptanceDateTime": ["2021-01-05T12:00:00.000Z"],
                "filingDate": ["2021-01-05"],
                "reportDate": [""],
                "items": [""],
            }
        },
    }
    (tmp_path / "CIK0000000042.json").write_text(json.dumps(other))
    r = load_filings([tmp_path / "*.json"], [], uni)
    assert r.rows_in == 5
    got = {json.loads(raw).get("accession"): reason for raw, reason in r.quarantine.select("raw", "reason").iter_rows()}
    assert got == {
        "0000320193-21-000001": edgar.R_FORM,
        "0000320193-21-000002": edgar.R_NO_TIME,  # a filing date is never a public time
        "0000000042-21-000001": edgar.R_NO_TICKER,
        None: edgar.R_NO_ACCESSION,
    }
    ok = r.accepted.row(0, named=True)
    assert ok["accession"] == "0000320193-21-000003" and ok["date"] == dt.date(2021, 1, 5)
    # a quarantined filing carries what its sources agreed on: form, CIK, the public time it would have had
    raws = {json.loads(raw).get("accession"): json.loads(raw) for raw in r.quarantine["raw"]}
    s8 = raws["0000320193-21-000001"]
    assert (s8["form_type"], s8["cik"], s8["public_time"]) == ("S-8", 320193, "2021-01-04T21:00:00+00:00")
    assert "public_time" not in raws["0000320193-21-000002"]  # no acceptance time: none is made up
    assert raws["0000000042-21-000001"]["cik"] == 42  # a CIK outside the universe is named as read
    assert ok["cik"] == 320193


def test_bad_paths_and_formats_are_errors(tmp_path, uni):
    with pytest.raises(SourceError, match="matches no file"):
        load_filings([tmp_path / "nothing"], [], uni)
    (tmp_path / "x.xml").write_text("<a/>")
    with pytest.raises(SourceError, match="unknown filings file format"):
        load_filings([tmp_path / "x.xml"], [], uni)
    (tmp_path / "y.json").write_text('{"hello": 1}')
    with pytest.raises(SourceError, match="not an SEC submissions JSON"):
        load_filings([tmp_path / "y.json"], [], uni)


# ---------------------------------------------------------------- full-submission text
SUBMISSION = """<SEC-DOCUMENT>0000320193-24-000120.txt : 20241031
<SEC-HEADER>0000320193-24-000120.hdr.sgml : 20241031
<ACCEPTANCE-DATETIME>20241031163025
ACCESSION NUMBER:\t\t0000320193-24-000120
CONFORMED SUBMISSION TYPE:\t8-K
CONFORMED PERIOD OF REPORT:\t20241031
ITEM INFORMATION:\t\tResults of Operations and Financial Condition
ITEM INFORMATION:\t\tFinancial Statements and Exhibits
FILED AS OF DATE:\t\t20241031
FILER:
\tCOMPANY DATA:
\t\tCOMPANY CONFORMED NAME:\t\t\tApple Inc.
\t\tCENTRAL INDEX KEY:\t\t\t0000320193
\t\tFISCAL YEAR END:\t\t\t0928
</SEC-HEADER>
<DOCUMENT>
<TYPE>8-K
<SEQUENCE>1
<FILENAME>aapl-20241031.htm
<TEXT>
<html><head><title>8-K</title><style>p {color: red}</style></head><body>
<div style="display:none"><ix:header><ix:hidden>hidden xbrl facts here</ix:hidden></ix:header></div>
<p>UNITED STATES SECURITIES AND EXCHANGE COMMISSION, Washington, D.C. 20549, FORM 8-K current report.</p>
<table><tr><td>Item 2.02</td><td>Results of Operations and Financial Condition</td></tr></table>
<p>On October 31, 2024, Apple Inc. issued a press release regarding its financial results for the quarter.
A copy is attached as Exhibit 99.1 &amp; incorporated here.</p>
<p><b>Item 9.01</b> Financial Statements and Exhibits.</p>
<p>(d) Exhibits: 99.1 Press release issued by Apple Inc. on October 31, 2024.</p>
</body></html>
</TEXT>
</DOCUMENT>
<DOCUMENT>
<TYPE>EX-99.1
<SEQUENCE>2
<FILENAME>a8-kex991q4202409282024.htm
<TEXT>
<html><body><p>Apple reports fourth quarter results. Apple today announced financial results for its
fiscal 2024 fourth quarter ended September 28, 2024. The Company posted quarterly revenue of $94.9 billion,
up 6 percent year over year.</p></body></html>
</TEXT>
</DOCUMENT>
<DOCUMENT>
<TYPE>GRAPHIC
<SEQUENCE>3
<FILENAME>logo.jpg
<TEXT>
begin 644 logo.jpg
M_]C_X``02D9)1@`!`0$`2`!(``#_VP!#``,"`@,"`@,#`P,$`P,$!0@%!00$
end
</TEXT>
</DOCUMENT>
</SEC-DOCUMENT>
"""


def test_full_submission_body_and_header_items(tmp_path, uni):
    d = tmp_path / "sec-edgar-filings" / "AAPL" / "8-K" / "0000320193-24-000120"
    d.mkdir(parents=True)
    (d / "full-submission.txt").write_text(SUBMISSION)
    only_index = load_filings([tmp_path / "sec-edgar-filings"], [], uni).accepted.row(0, named=True)
    assert only_index["text"] == ""  # header only when the folder is not a text path
    r = load_filings([], [tmp_path / "sec-edgar-filings"], uni)
    row = r.accepted.row(0, named=True)
    assert row["items"] == "2.02,9.01"
    assert row["public_time"] == dt.datetime(2024, 10, 31, 20, 30, 25, tzinfo=UTC)  # EDT, UTC-4
    assert row["fiscal_period"] == "Q4 2024"
    text = row["text"]
    assert "Exhibit 99.1 & incorporated" in text and "<" not in text
    assert "hidden xbrl" not in text and "color: red" not in text and "begin 644" not in text
    assert text.index("Item 9.01") < text.index("EX-99.1") < text.index("posted quarterly revenue")
    items = [p["item"] for p in split_filing_passages(text, "8-K", 160)]
    assert items == ["Cover", "Item 2.02", "Item 9.01", "Exhibit 99.1"]


# ---------------------------------------------------------------- fiscal periods
def test_fiscal_periods():
    assert fiscal_period("10-Q", dt.date(2022, 12, 31), "0930") == "Q1 2023"
    assert fiscal_period("10-Q", dt.date(2023, 7, 1), "0926") == "Q3 2023"
    assert fiscal_period("10-K", dt.date(2023, 9, 30), "0926") == "FY2023"  # 52/53-week year
    assert fiscal_period("10-Q", dt.date(2020, 12, 31), "0630") == "Q2 2021"
    assert fiscal_period("10-Q", dt.date(2021, 3, 31), None) == "Q1 2021"
    assert fiscal_period("10-K/A", dt.date(2021, 12, 31), None) == "FY2021"
    assert fiscal_period("8-K", None, "1231", "no period mentioned here") is None


@pytest.mark.parametrize(
    "text, fye, want",
    [
        ("Apple reported its fiscal 2024 third quarter results", "0928", "Q3 2024"),
        ("results for the third quarter of fiscal 2024 were", "0630", "Q3 2024"),
        ("Revenue in Q3 2024 grew", None, "Q3 2024"),
        ("results for its fourth fiscal quarter ended September 28, 2024", "0928", "Q4 2024"),
        ("for the quarter ended December 31, 2023, revenue", "0630", "Q2 2024"),
        ("Q1 2023 first, then fiscal 2024 third quarter", None, "Q1 2023"),
        ("nothing about periods", None, None),
    ],
)
def test_period_in_text(text, fye, want):
    assert period_in_text(text, fye) == want


# ---------------------------------------------------------------- passages on real Apple text
def test_text_parquet_joins_sections_in_order(apple_texts, text_result):
    assert text_result.rows_in == 3 and text_result.quarantine.height == 0
    k = apple_texts["10-K"]["text"]
    assert k.startswith("UNITED STATES")
    positions = [k.index(h) for h in ("Item 1.", "Item 1A.", "Item 7.", "Item 8.", "Item 16.")]
    assert positions == sorted(positions)
    assert apple_texts["10-K"]["report_date"] == dt.date(2024, 9, 28)  # from the cover page
    # Alone, the text parquet says nothing of Apple's September fiscal year, and no earlier 10-K
    # is loaded: the calendar year is assumed (a later 10-K is never consulted, point in time).
    assert apple_texts["10-Q"]["fiscal_period"] == "Q2 2024"
    assert apple_texts["8-K"]["fiscal_period"] == "Q4 2024"


def test_submissions_json_supplies_the_fiscal_year_end(real_data, uni):
    res = load_filings([real_data / "raw" / "sec_submissions" / "CIK0000320193.json"], [real_data / "filings" / "filings_text.parquet"], uni)
    q = res.accepted.filter(pl.col("accession") == "0000320193-24-000081").row(0, named=True)
    assert q["fiscal_period"] == "Q3 2024" and q["text"]


def test_split_real_10k(apple_texts):
    ps = split_filing_passages(apple_texts["10-K"]["text"], "10-K", 160)
    items = [p["item"] for p in ps]
    order = list(dict.fromkeys(items))
    assert order == [
        "Cover",
        "Item 1",
        "Item 1A",
        "Item 1C",
        "Item 2",
        "Item 3",
        "Item 4",
        "Item 5",
        "Item 6",
        "Item 7",
        "Item 7A",
        "Item 8",
        "Item 9A",
        "Item 9B",
        "Item 10",
        "Item 11",
        "Item 12",
        "Item 13",
        "Item 14",
        "Item 15",
        "Item 16",
    ]  # 1B, 9, 9C: "None." / too short
    assert all(5 <= len(p["text"].split()) <= 160 for p in ps)
    assert all(re.fullmatch(r"Cover|Item \d{1,2}[A-D]?", i) for i in items)
    risk = [p for p in ps if p["item"] == "Item 1A"]
    assert len(risk) > 20 and risk[0]["text"].startswith("Item 1A. Risk Factors")
    assert {p["part"] for p in ps if p["item"] == "Item 7"} == {"II"}
    assert ps == split_filing_passages(apple_texts["10-K"]["text"], "10-K", 160)  # deterministic
    short = split_filing_passages(apple_texts["10-K"]["text"], "10-K", 60)
    assert len(short) > 2 * len(ps) and all(len(p["text"].split()) <= 60 for p in short)


def test_split_real_10q_keeps_parts_apart(apple_texts):
    ps = split_filing_passages(apple_texts["10-Q"]["text"], "10-Q", 160)
    keys = list(dict.fromkeys((p["part"], p["item"]) for p in ps))
    assert ("I", "Item 2") in keys and ("II", "Item 1A") in keys and ("II", "Item 2") in keys
    mdna = " ".join(p["text"] for p in ps if (p["part"], p["item"]) == ("I", "Item 2"))
    assert "Management’s Discussion and Analysis" in mdna
    assert not any("|:-" in p["text"] for p in ps)  # markdown table rules removed


def test_split_real_8k(apple_texts):
    ps = split_filing_passages(apple_texts["8-K"]["text"], "8-K", 160)
    assert [p["item"] for p in ps if p["item"] != "Cover"] == ["Item 2.02", "Item 9.01"]
    assert "fourth fiscal quarter ended September 28, 2024" in ps[[p["item"] for p in ps].index("Item 2.02")]["text"]


def test_table_of_contents_lines_do_not_start_sections():
    text = (
        "FORM 10-K annual report of Example Corp for the fiscal year\n"
        "PART I\nItem 1. Business 3\nItem 1A. Risk Factors 9\nPART II\nItem 7. MD&A 20\n"
        "Forward-looking statements in this report involve risks and uncertainties of many kinds.\n"
        "PART I\nItem 1. Business\nExample Corp makes widgets for industrial customers around the world.\n"
        "Item 1A. Risk Factors\nDemand for widgets may fall sharply in a recession and hurt revenue.\n"
        "Item 1B. Unresolved Staff Comments\nNone.\n"
        "PART II\nItem 7. Management's Discussion\nRevenue grew 5% to $10 million on higher widget volume.\n"
    )
    ps = split_filing_passages(text, "10-K", 160)
    assert [(p["part"], p["item"]) for p in ps] == [(None, "Cover"), ("I", "Item 1"), ("I", "Item 1A"), ("II", "Item 7")]
    assert "Forward-looking statements" in ps[0]["text"]  # text after the contents stays in the cover
    assert ps[1]["text"] == "Item 1. Business Example Corp makes widgets for industrial customers around the world."
    assert "PART" not in " ".join(p["text"] for p in ps[1:])
    assert split_filing_passages("", "10-K") == [] and split_filing_passages("Too short.", "8-K") == []


def test_long_sections_are_chunked_on_sentences():
    sent = "The company sold many widgets to many customers this year. "
    text = "Item 7. MD&A\n" + sent * 40  # 10 words a sentence
    ps = split_filing_passages(text, "10-K", 35)
    assert len(ps) > 5 and all(len(p["text"].split()) <= 35 for p in ps)
    assert all(p["text"].endswith("this year.") for p in ps)
    assert " ".join(p["text"] for p in ps).split() == ("Item 7. MD&A " + sent * 40).split()
