"""EDGAR inputs that lie: parallel arrays that do not line up, a corrupt filing among good ones,
and company names as they were at filing time (fixtures: tests/data/bad/edgar, PROVENANCE.md)."""

import json
from pathlib import Path

import pandas as pd
import polars as pl

from finrag_dagster.sources import edgar
from finrag_dagster.sources.edgar import load_filings

BAD = Path(__file__).resolve().parents[1] / "data" / "bad" / "edgar"
GOOD_JSON = Path(__file__).resolve().parents[1] / "data" / "edgar_fetch" / "data.sec.gov" / "submissions" / "CIK0000320193.json"
UNIVERSE = pl.DataFrame({"ticker": ["AAPL"], "cik": [320193]})
SGML = BAD / "sec-edgar-filings"


def test_unequal_arrays_quarantine_the_file_never_zip_it():
    res = load_filings([BAD / "short_arrays" / "CIK0000320193.json"], [], UNIVERSE)
    assert res.accepted.height == 0
    assert res.quarantine.height == res.rows_in == 12
    reasons = set(res.quarantine["reason"])
    assert reasons == {f"{edgar.R_UNEQUAL_ARRAYS} (accessionNumber 12, acceptanceDateTime 11)"}


def test_a_filing_in_a_bad_json_keeps_only_its_trustworthy_time():
    """The SGML header of 0000320193-23-000064 still gives its acceptance time; the misaligned
    JSON gives none (zipped, it would have lent the filing its neighbour's earlier time)."""
    res = load_filings([BAD / "short_arrays" / "CIK0000320193.json", SGML], [], UNIVERSE)
    acc = {r["accession"]: r for r in res.accepted.iter_rows(named=True)}
    assert set(acc) == {"0000320193-23-000006", "0000320193-23-000064"}
    assert acc["0000320193-23-000064"]["acceptance_source"] == "sgml_header"
    assert pd.Timestamp(acc["0000320193-23-000064"]["public_time"]) == pd.Timestamp("2023-05-04 18:03:52", tz="America/New_York")
    assert res.rows_in == res.accepted.height + res.quarantine.height


def test_one_corrupt_filing_is_quarantined_and_the_others_load():
    res = load_filings([SGML], [SGML], UNIVERSE)
    assert sorted(res.accepted["accession"]) == ["0000320193-23-000006", "0000320193-23-000064"]
    q = res.quarantine.row(0, named=True)
    assert res.quarantine.height == 1 and q["source_file"].startswith("0000320193-23-000077/")
    assert q["reason"].startswith(edgar.R_CORRUPT) and "binary or corrupt" in q["reason"]
    assert res.rows_in == 3


def test_company_name_as_it_was_at_filing_time(tmp_path):
    doc = json.loads(GOOD_JSON.read_text())
    rec = doc["filings"]["recent"]
    # move one 10-Q back to 2018, when the registrant's conformed name was APPLE INC (formerNames)
    i = rec["accessionNumber"].index("0000320193-23-000077")
    rec["acceptanceDateTime"][i], rec["filingDate"][i] = "2018-08-01T20:30:00.000Z", "2018-08-01"
    f = tmp_path / "CIK0000320193.json"
    f.write_text(json.dumps(doc))
    got = {r["accession"]: r["company"] for r in load_filings([f], [], UNIVERSE).accepted.iter_rows(named=True)}
    assert got["0000320193-23-000077"] == "APPLE INC"
    assert got["0000320193-23-000064"] == "Apple Inc."  # after the last former name ended: today's name
    # the SGML header's COMPANY CONFORMED NAME is the name at filing time and wins over the JSON's
    j = rec["accessionNumber"].index("0000320193-23-000064")
    rec["acceptanceDateTime"][j], rec["filingDate"][j] = "2018-08-01T20:30:00.000Z", "2018-08-01"
    f.write_text(json.dumps(doc))
    assert {r["accession"]: r["company"] for r in load_filings([f], [], UNIVERSE).accepted.iter_rows(named=True)}[
        "0000320193-23-000064"
    ] == "APPLE INC"
    hdr = load_filings([f, SGML], [], UNIVERSE).accepted
    assert dict(zip(hdr["accession"], hdr["company"]))["0000320193-23-000064"] == "Apple Inc."


def test_an_acceptance_time_that_contradicts_its_filing_date_is_quarantined(tmp_path):
    """EDGAR dates a filing accepted after 17:30 New York time on the next business day, so the
    acceptance's New York date is the filing date or a few days before it. A month before (it would
    decide the filing a month early) or a day after is a source contradicting itself."""
    doc = json.loads(GOOD_JSON.read_text())
    rec = doc["filings"]["recent"]
    idx = {a: rec["accessionNumber"].index(a) for a in ("0000320193-24-000120", "0000320193-23-000064", "0000320193-23-000077")}
    rec["acceptanceDateTime"][idx["0000320193-24-000120"]] = "2024-09-30T20:30:25.000Z"  # a month early
    rec["filingDate"][idx["0000320193-24-000120"]] = "2024-10-31"
    rec["acceptanceDateTime"][idx["0000320193-23-000064"]] = "2023-05-06T15:00:00.000Z"  # two days after
    rec["filingDate"][idx["0000320193-23-000064"]] = "2023-05-04"
    rec["acceptanceDateTime"][idx["0000320193-23-000077"]] = "2023-07-28T22:10:00.000Z"  # Friday 18:10 New York
    rec["filingDate"][idx["0000320193-23-000077"]] = "2023-07-31"  # dated the next Monday: allowed
    f = tmp_path / "CIK0000320193.json"
    f.write_text(json.dumps(doc))
    res = load_filings([f], [], UNIVERSE)
    accepted = set(res.accepted["accession"])
    assert "0000320193-24-000120" not in accepted, "a filing accepted a month before its own filing date was given that time"
    assert "0000320193-23-000064" not in accepted, "a filing accepted after its own filing date was given that time"
    reasons = {json.loads(raw)["accession"]: why for raw, why in res.quarantine.select("raw", "reason").iter_rows()}
    assert reasons.get("0000320193-24-000120", "").startswith(edgar.R_ACCEPTANCE_VS_FILED)
    assert "31 days before its filing date 2024-10-31" in reasons["0000320193-24-000120"]
    assert "2 days after its filing date 2023-05-04" in reasons.get("0000320193-23-000064", "")
    assert "0000320193-23-000077" in accepted
    assert res.rows_in == res.accepted.height + res.quarantine.height


def test_a_submission_over_the_size_limit_is_quarantined_unread(monkeypatch):
    """Memory stays bounded: a full-submission.txt over the limit is one quarantine row, never read,
    and the independent filing count agrees."""
    from finrag_dagster.sources import rowcount

    sizes = {p.parent.name: p.stat().st_size for p in SGML.rglob("full-submission.txt")}
    limit = sorted(sizes.values())[-1] - 1  # only the largest file is over it
    big = max(sizes, key=sizes.get)
    monkeypatch.setattr(edgar.full_submission, "MAX_SUBMISSION_BYTES", limit)  # the global read_full_submission reads
    monkeypatch.setattr(rowcount, "MAX_SUBMISSION_BYTES", limit)
    read = []
    monkeypatch.setattr(type(SGML), "read_bytes", lambda self, _orig=type(SGML).read_bytes: read.append(self.parent.name) or _orig(self))
    res = load_filings([SGML], [SGML], UNIVERSE)
    q = res.quarantine.filter(pl.col("source_file").str.starts_with(big + "/"))
    assert q.height == 1 and "over the" in q["reason"][0] and f"{limit:,}-byte limit" in q["reason"][0]
    assert big not in read and big not in set(res.accepted["accession"])
    assert res.rows_in == res.accepted.height + res.quarantine.height == rowcount.filing_records([SGML], [SGML])


def _one_field_changed(tmp_path, field: str, value: str) -> tuple[Path, int]:
    """Apple's submissions JSON with one field of the 10-Q 0000320193-23-000077 changed: (file, its row)."""
    doc = json.loads(GOOD_JSON.read_text())
    rec = doc["filings"]["recent"]
    i = rec["accessionNumber"].index("0000320193-23-000077")
    rec[field][i] = value
    f = tmp_path / "CIK0000320193.json"
    f.write_text(json.dumps(doc))
    return f, i


def test_a_filing_agents_accession_keeps_the_registrants_cik(tmp_path):
    """An accession number's first ten digits name whoever filed it (here a filing agent, 0001193125),
    not the company: the filing's CIK is the one its source gives."""
    f, _ = _one_field_changed(tmp_path, "accessionNumber", "0001193125-23-000077")
    got = {r["accession"]: r["cik"] for r in load_filings([f], [], UNIVERSE).accepted.iter_rows(named=True)}
    assert got["0001193125-23-000077"] == 320193


def test_a_universe_without_ciks_takes_the_sources_ticker_and_flags_nothing(tmp_path):
    """No CIK in the universe: the ticker comes from the source itself, and no filing is flagged as
    going to one of several tickers that share a CIK."""
    uni = pl.DataFrame({"ticker": ["AAPL"], "cik": [None]}, schema={"ticker": pl.String, "cik": pl.Int64})
    res = load_filings([GOOD_JSON], [], uni)
    assert res.accepted.height > 0 and set(res.accepted["ticker"]) == {"AAPL"}
    assert res.flags.height == 0


def test_a_filing_without_a_form_is_quarantined_with_an_empty_form(tmp_path):
    f, i = _one_field_changed(tmp_path, "form", " ")
    q = load_filings([f], [], UNIVERSE).quarantine
    row = q.filter(pl.col("source_row") == i).row(0, named=True)
    assert row["reason"] == edgar.R_FORM
    assert json.loads(row["raw"])["form_type"] == ""
