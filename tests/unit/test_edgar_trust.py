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
    rec["acceptanceDateTime"][i] = "2018-08-01T20:30:00.000Z"
    f = tmp_path / "CIK0000320193.json"
    f.write_text(json.dumps(doc))
    got = {r["accession"]: r["company"] for r in load_filings([f], [], UNIVERSE).accepted.iter_rows(named=True)}
    assert got["0000320193-23-000077"] == "APPLE INC"
    assert got["0000320193-23-000064"] == "Apple Inc."  # after the last former name ended: today's name
    # the SGML header's COMPANY CONFORMED NAME is the name at filing time and wins over the JSON's
    rec["acceptanceDateTime"][rec["accessionNumber"].index("0000320193-23-000064")] = "2018-08-01T20:30:00.000Z"
    f.write_text(json.dumps(doc))
    assert {r["accession"]: r["company"] for r in load_filings([f], [], UNIVERSE).accepted.iter_rows(named=True)}[
        "0000320193-23-000064"
    ] == "APPLE INC"
    hdr = load_filings([f, SGML], [], UNIVERSE).accepted
    assert dict(zip(hdr["accession"], hdr["company"]))["0000320193-23-000064"] == "Apple Inc."
