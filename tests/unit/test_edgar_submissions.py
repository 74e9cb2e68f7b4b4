"""The submissions JSON reader, record by record: every field of every record of a small file written
here is compared with a value worked out by hand (UTC times from ``datetime``, the date-only rule of
docs/time.md), and every refusal with its whole message."""

import datetime as dt
import json

import pytest

from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.edgar import FilingRecord
from finrag_dagster.sources.edgar.submissions import read_submissions_json

UTC = dt.timezone.utc


def _ns(*args) -> int:
    return int(dt.datetime(*args, tzinfo=UTC).timestamp()) * 10**9


DOC = {
    "cik": "320193",
    "name": "Apple Inc.",
    "tickers": [" aapl ", "", None, "  ", "aapl.b"],
    "fiscalYearEnd": "0925",
    "formerNames": [
        {"name": "APPLE COMPUTER INC ", "from": "1994-01-26T00:00:00.000Z", "to": "2007-01-04T00:00:00.000Z"},
        {"name": "OLDER NAME", "from": "1990-01-01T00:00:00.000Z", "to": "1994-01-25T00:00:00.000Z"},
        {"name": "", "from": "1980-01-01T00:00:00.000Z", "to": "2030-01-01T00:00:00.000Z"},  # no name: not a former name
        {"name": "NO START", "to": "2030-01-01T00:00:00.000Z"},  # no from: not used
        {"name": "NO END", "from": "1980-01-01T00:00:00.000Z", "to": "later"},  # unparseable to: not used
        "not a record",
    ],
    "filings": {
        "recent": {
            "accessionNumber": ["0000320193-21-000105", " 000032019307000001 ", "0000320193-94-000002", "bad"],
            "form": [" 8-K ", "10-Q", "  ", None],
            "acceptanceDateTime": ["2021-10-28T16:30:35.000Z", "2007-01-04", "1994-01-25T12:00:00.000Z", ""],
            "filingDate": ["2021-10-28", "2007-01-04", "1994-01-25", None],
            "reportDate": ["2021-10-28", "", None, ""],
            "items": [" 2.02,9.01 ", None, "", ""],
        }
    },
}


def _write(tmp_path, doc, name="CIK0000320193.json"):
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


def test_every_field_of_every_record_by_hand(tmp_path):
    got = read_submissions_json(_write(tmp_path, DOC), file_index=7)
    common = dict(source="submissions_json", source_file="CIK0000320193.json", file_index=7, cik=320193, ticker="AAPL")
    # the names: today's, then the former ones that have a name and both dates, oldest first
    common |= dict(tickers=("AAPL", "AAPL.B"), names=("Apple Inc.", "OLDER NAME", "APPLE COMPUTER INC"), fye="0925")
    want = [
        FilingRecord(
            accession="0000320193-21-000105",
            source_row=0,
            form_type="8-K",
            company="Apple Inc.",  # after the last former name ended: today's name
            accepted_ns=_ns(2021, 10, 28, 16, 30, 35),
            filed_date=dt.date(2021, 10, 28),
            report_date=dt.date(2021, 10, 28),
            items="2.02,9.01",
            **common,
        ),
        FilingRecord(
            accession="0000320193-07-000001",
            source_row=1,
            form_type="10-Q",
            # a date only is public at 23:59:59 New York (EST: 04:59:59 UTC the next day), after the
            # former name's last day (it ends at the end of 2007-01-04 UTC): today's name
            company="Apple Inc.",
            accepted_ns=_ns(2007, 1, 5, 4, 59, 59),
            date_only="2007-01-04",
            filed_date=dt.date(2007, 1, 4),
            report_date=None,
            items="",
            **common,
        ),
        FilingRecord(
            accession="0000320193-94-000002",
            source_row=2,
            form_type=None,  # blank form
            company="OLDER NAME",  # 1994-01-25 12:00 UTC falls in the older name's last day
            accepted_ns=_ns(1994, 1, 25, 12),
            filed_date=dt.date(1994, 1, 25),
            **common,
        ),
        FilingRecord(accession=None, source_row=3, form_type=None, company="Apple Inc.", **common),
    ]
    assert got == want


def test_a_former_name_covers_its_whole_last_day(tmp_path):
    doc = json.loads(json.dumps(DOC))
    rec = doc["filings"]["recent"]
    rec["acceptanceDateTime"][0] = "2007-01-04T23:59:59.000Z"  # the last second of the former name's last day
    rec["acceptanceDateTime"][1] = "2007-01-05T00:00:00.000Z"  # the first second after it
    rec["acceptanceDateTime"][2] = "1994-01-26T00:00:00.000Z"  # the first second of the former name
    got = read_submissions_json(_write(tmp_path, doc), file_index=0)
    assert [r.company for r in got[:3]] == ["APPLE COMPUTER INC", "Apple Inc.", "APPLE COMPUTER INC"]


def test_an_overflow_page_has_its_arrays_at_the_top_and_no_tickers(tmp_path):
    page = dict(DOC["filings"]["recent"])
    got = read_submissions_json(_write(tmp_path, page, "CIK0000320193-submissions-001.json"), file_index=2)
    assert [r.accession for r in got] == ["0000320193-21-000105", "0000320193-07-000001", "0000320193-94-000002", None]
    assert {(r.cik, r.ticker, r.tickers, r.names, r.company, r.fye, r.source_file) for r in got} == {
        (320193, None, (), (), None, None, "CIK0000320193-submissions-001.json")
    }


def test_filings_recent_wins_over_arrays_at_the_top(tmp_path):
    doc = dict(DOC, accessionNumber=["0000320193-99-000001"])  # a stray top-level array beside filings.recent
    assert len(read_submissions_json(_write(tmp_path, doc), 0)) == 4


def test_a_fiscal_year_end_that_is_not_four_digits_is_none(tmp_path):
    for fye in ("925", "09-25", 925, "09250"):
        doc = dict(DOC, fiscalYearEnd=fye)
        assert {r.fye for r in read_submissions_json(_write(tmp_path, doc), 0)} == {None}


def _problems(got):
    return [(r.accession, r.source_row, r.cik, r.problem, r.form_type, r.accepted_ns, r.source, r.file_index) for r in got]


def test_unequal_arrays_quarantine_every_accession_with_the_lengths(tmp_path):
    doc = json.loads(json.dumps(DOC))
    rec = doc["filings"]["recent"]
    rec["acceptanceDateTime"].pop()
    rec["items"] += ["", ""]
    why = "submissions JSON arrays of unequal length (accessionNumber 4, acceptanceDateTime 3, items 6)"
    got = read_submissions_json(_write(tmp_path, doc), 3)
    assert _problems(got) == [
        ("0000320193-21-000105", 0, 320193, why, None, None, "submissions_json", 3),
        ("0000320193-07-000001", 1, 320193, why, None, None, "submissions_json", 3),
        ("0000320193-94-000002", 2, 320193, why, None, None, "submissions_json", 3),
        (None, 3, 320193, why, None, None, "submissions_json", 3),
    ]
    assert {r.source_file for r in got} == {"CIK0000320193.json"}


@pytest.mark.parametrize("drop", [("form",), ("acceptanceDateTime", "filingDate")])
def test_missing_arrays_are_named_on_every_accession(tmp_path, drop):
    doc = json.loads(json.dumps(DOC))
    for k in drop:
        del doc["filings"]["recent"][k]
    got = read_submissions_json(_write(tmp_path, doc), 5)
    why = "submissions JSON without the arrays a filing needs: " + ", ".join(drop)
    assert [(r.problem, r.source_row, r.file_index, r.cik) for r in got] == [(why, i, 5, 320193) for i in range(4)]


def test_a_missing_optional_array_is_none_on_every_record(tmp_path):
    doc = json.loads(json.dumps(DOC))
    del doc["filings"]["recent"]["reportDate"], doc["filings"]["recent"]["items"]
    got = read_submissions_json(_write(tmp_path, doc), 0)
    assert [(r.report_date, r.items, r.problem) for r in got] == [(None, "", None)] * 4
    assert [r.form_type for r in got] == ["8-K", "10-Q", None, None]


def test_a_cik_that_contradicts_the_file_name_quarantines_every_accession(tmp_path):
    got = read_submissions_json(_write(tmp_path, dict(DOC, cik="789019")), 4)
    why = (
        "submissions JSON cik contradicts its file name: cik 789019 in the file, CIK 320193 in its name CIK0000320193.json "
        "(none of its filings is used: re-download it or fix the name)"
    )
    assert [(r.cik, r.problem, r.file_index) for r in got] == [(789019, why, 4)] * 4


def test_the_cik_comes_from_the_field_else_the_file_name(tmp_path):
    assert {r.cik for r in read_submissions_json(_write(tmp_path, dict(DOC, cik=None)), 0)} == {320193}
    assert {r.cik for r in read_submissions_json(_write(tmp_path, dict(DOC, cik="0000320193"), "apple.json"), 0)} == {320193}
    assert {r.cik for r in read_submissions_json(_write(tmp_path, dict(DOC, cik="n/a"), "apple.json"), 0)} == {None}
    assert {r.cik for r in read_submissions_json(_write(tmp_path, dict(DOC, cik=None), "cik0000320193.json"), 0)} == {320193}


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "CIK0000320193.json: not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
        ("[1, 2]", "CIK0000320193.json: not an SEC submissions JSON"),
        ('{"filings": {"recent": {"form": []}}}', "CIK0000320193.json: not an SEC submissions JSON (no filings.recent.accessionNumber)"),
        ('{"filings": "recent"}', "CIK0000320193.json: not an SEC submissions JSON (no filings.recent.accessionNumber)"),
        ('{"filings": {"recent": []}}', "CIK0000320193.json: not an SEC submissions JSON (no filings.recent.accessionNumber)"),
        (
            '{"cik": "1", "cik": "2", "accessionNumber": []}',
            "CIK0000320193.json: key 'cik' given twice with different values (which one is meant cannot be told): fix the file",
        ),
    ],
)
def test_refusals_name_the_file_and_the_cause(tmp_path, text, message):
    f = tmp_path / "CIK0000320193.json"
    f.write_text(text)
    with pytest.raises(SourceError) as e:
        read_submissions_json(f, 0)
    assert str(e.value) == message


def test_a_key_given_twice_with_the_same_value_is_read(tmp_path):
    f = tmp_path / "CIK0000320193.json"
    f.write_text(
        '{"cik": "320193", "cik": "320193", "accessionNumber": ["0000320193-21-000105"], "form": ["8-K"], '
        '"acceptanceDateTime": ["2021-10-28T16:30:35.000Z"], "filingDate": ["2021-10-28"]}'
    )
    (r,) = read_submissions_json(f, 0)
    assert (r.cik, r.form_type, r.accepted_ns) == (320193, "8-K", _ns(2021, 10, 28, 16, 30, 35))


def test_latin1_bytes_are_refused_with_the_offset(tmp_path):
    f = tmp_path / "CIK0000320193.json"
    f.write_bytes('{"name": "Soci\u00e9t\u00e9"}'.encode("latin-1"))
    with pytest.raises(SourceError) as e:
        read_submissions_json(f, 0)
    assert str(e.value) == "CIK0000320193.json: not UTF-8 text (byte 0xe9 at offset 14; Latin-1 or Windows-1252?): save it as UTF-8"
