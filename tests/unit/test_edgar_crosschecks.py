"""EDGAR sources that contradict themselves are never read silently: a submissions JSON whose ``cik``
names another company than its file name, a source whose own ticker is not the one the universe
gives its CIK, two universe tickers on one CIK, a truncated ``full-submission.txt``, and a folder
whose accession is not its header's (fixtures: tests/data/bad/edgar, PROVENANCE.md; rules:
docs/bad_inputs.md, EDGAR)."""

import datetime as dt
import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from finrag_dagster.core.settings import WorldSettings
from finrag_dagster.sources import edgar
from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.edgar import load_filings
from finrag_dagster.sources.rowcount import filing_records
from finrag_dagster.sources.universe import load_universe

DATA = Path(__file__).resolve().parents[1] / "data"
BAD = DATA / "bad" / "edgar"
APPLE_JSON = DATA / "edgar_fetch" / "data.sec.gov" / "submissions" / "CIK0000320193.json"  # 12 real filings, 10 of forms used
REAL_INDEX = DATA / "real" / "filings" / "filings_index.parquet"
UNIVERSE = pl.DataFrame({"ticker": ["AAPL", "INTC"], "cik": [320193, 50863]})
TRUNCATED = BAD / "truncated" / "sec-edgar-filings"
TRUNCATED_FILE = TRUNCATED / "AAPL" / "10-Q" / "0000320193-23-000064" / "full-submission.txt"


def balanced(res, index_paths, text_paths=()) -> None:
    """rows in = accepted + quarantined, and = the filings counted in the files without the loader."""
    assert res.rows_in == res.accepted.height + res.quarantined
    assert filing_records(index_paths, list(text_paths)) == res.rows_in


def reasons_by_accession(res) -> dict[str, str]:
    return {json.loads(raw)["accession"]: why for raw, why in res.quarantine.select("raw", "reason").iter_rows()}


# ---------------------------------------------------------------- 1. CIK vs file name vs ticker
def test_a_json_cik_that_contradicts_its_file_name_quarantines_the_whole_file():
    """The file is Apple's (name, tickers, accessions) but its ``cik`` says Intel's 50863: read as it
    was, all of Apple's filings went to INTC. Which of the two is right is unknown, so none is used."""
    paths = [BAD / "cik_vs_name" / "CIK0000320193.json"]
    res = load_filings(paths, [], UNIVERSE)
    assert res.accepted.height == 0 and res.quarantine.height == res.rows_in == 12
    assert set(res.quarantine["reason"]) == {
        f"{edgar.R_CIK_VS_FILE}: cik 50863 in the file, CIK 320193 in its name CIK0000320193.json "
        "(none of its filings is used: re-download it or fix the name)"
    }
    balanced(res, paths)


def test_a_filing_of_a_contradicted_json_keeps_its_own_header():
    """Like arrays that do not line up: a filing that a ``full-submission.txt`` also gives loads from it."""
    paths = [BAD / "cik_vs_name" / "CIK0000320193.json", BAD / "sec-edgar-filings"]
    res = load_filings(paths, [], UNIVERSE)
    acc = {r["accession"]: r for r in res.accepted.iter_rows(named=True)}
    assert set(acc) == {"0000320193-23-000006", "0000320193-23-000064"}
    assert {r["ticker"] for r in acc.values()} == {"AAPL"} and {r["acceptance_source"] for r in acc.values()} == {"sgml_header"}
    balanced(res, paths)


def test_a_json_named_without_its_cik_uses_the_field_and_its_tickers_must_agree():
    """``submissions.json`` (no CIK in its name) says cik 50863, which the universe gives to INTC, but
    names itself AAPL (Apple Inc.): every filing is quarantined naming both, none goes to INTC."""
    paths = [BAD / "ticker_vs_universe" / "submissions.json"]
    res = load_filings(paths, [], UNIVERSE)
    assert res.accepted.height == 0
    why = (
        f"{edgar.R_TICKER_VS_SOURCE}: the universe gives CIK 50863 to INTC, submissions.json names itself AAPL (Apple Inc.); "
        "fix the universe's cik column or the source"
    )
    assert dict(res.quarantine.group_by("reason").len().iter_rows()) == {why: 10, edgar.R_FORM: 2}
    balanced(res, paths)


def test_a_universe_cik_typo_does_not_file_apple_under_intel():
    """The universe gives Apple's CIK to INTC (and has no AAPL): the real Apple JSON and the real
    downloader folders name themselves AAPL, so their filings are quarantined, not filed as INTC's."""
    typo = pl.DataFrame({"ticker": ["INTC"], "cik": [320193], "aliases": ["intel corp|intel"]})
    res = load_filings([APPLE_JSON], [], typo)
    assert res.accepted.height == 0
    assert set(reasons_by_accession(res).values()) == {
        edgar.R_FORM,
        f"{edgar.R_TICKER_VS_SOURCE}: the universe gives CIK 320193 to INTC, CIK0000320193.json names itself AAPL (Apple Inc.); "
        "fix the universe's cik column or the source",
    }
    folders = [BAD / "sec-edgar-filings"]
    res = load_filings(folders, folders, typo)
    assert res.accepted.height == 0
    assert reasons_by_accession(res)["0000320193-23-000064"] == (
        f"{edgar.R_TICKER_VS_SOURCE}: the universe gives CIK 320193 to INTC, 0000320193-23-000064/full-submission.txt names "
        "itself AAPL (Apple Inc.); fix the universe's cik column or the source"
    )
    balanced(res, folders, folders)


def test_a_renamed_ticker_passes_when_the_names_agree_and_a_non_downloader_folder_names_no_ticker(tmp_path):
    """The universe's symbol may be older or newer than the source's (FB/META): the same company's
    name lets it through. A file outside ``<TICKER>/<FORM>/<ACCESSION>/`` has no ticker of its own."""
    renamed = pl.DataFrame({"ticker": ["APPL_OLD"], "cik": [320193], "aliases": ["apple inc.|apple"]})
    res = load_filings([APPLE_JSON], [], renamed)
    assert res.accepted.height == 10 and set(res.accepted["ticker"]) == {"APPL_OLD"}
    loose = tmp_path / "somewhere" / "else" / "full-submission.txt"
    loose.parent.mkdir(parents=True)
    shutil.copy(BAD / "sec-edgar-filings" / "AAPL" / "10-Q" / "0000320193-23-000064" / "full-submission.txt", loose)
    res = load_filings([loose], [], pl.DataFrame({"ticker": ["AAPL"], "cik": [320193]}))
    assert res.accepted["ticker"].to_list() == ["AAPL"] and res.quarantine.height == 0


# ---------------------------------------------------------------- 2. two universe tickers, one CIK
def test_share_classes_on_one_cik_get_each_filing_once_and_a_flag():
    """GOOG and GOOGL (Alphabet, CIK 1652044): a filing goes to one ticker (the source's own when it
    names one of them, else the first in sort order), never twice, and each such filing is flagged."""
    uni = load_universe(BAD / "shared_cik" / "share_classes" / "tickers.csv")
    res = load_filings([REAL_INDEX], [], uni)
    alphabet = res.accepted.filter(pl.col("cik") == 1652044)
    assert alphabet.height > 0 and alphabet["accession"].n_unique() == alphabet.height
    assert set(alphabet["ticker"]) <= {"GOOG", "GOOGL"}
    flags = res.flags
    assert set(flags["flag"]) == {edgar.F_SHARED_CIK}
    assert sorted(zip(flags["ticker"], flags["date"])) == sorted(zip(alphabet["ticker"], alphabet["date"]))
    goog = alphabet.filter(pl.col("ticker") == "GOOG").row(0, named=True)
    detail = flags.filter((pl.col("ticker") == "GOOG") & (pl.col("date") == goog["date"]))["detail"].to_list()
    assert any(
        d.startswith(f"CIK 1652044 is shared by universe tickers GOOG, GOOGL: filing {goog['accession']} goes to GOOG only")
        and d.endswith("GOOGL gets no copy")
        for d in detail
    )
    assert res.accepted.filter(pl.col("ticker") == "AAPL").height > 0 and not flags.filter(pl.col("ticker") == "AAPL").height
    assert res.rows_in == res.accepted.height + res.quarantined


def test_two_unrelated_companies_on_one_cik_are_an_error():
    """INTC given Apple's CIK 320193 in the universe: their names share nothing, so this is a wrong
    cik cell, not share classes; loading filings stops and says which cells to fix."""
    uni = load_universe(BAD / "shared_cik" / "unrelated" / "tickers.csv")
    with pytest.raises(SourceError) as err:
        load_filings([APPLE_JSON], [], uni)
    msg = str(err.value)
    assert "CIK 320193 is given to AAPL (Apple Inc.) and INTC (Intel), which name different companies" in msg
    assert "Fix the cik column of the universe file (sources.universe)" in msg


def test_a_universe_without_names_cannot_tell_share_classes_apart_so_it_flags():
    uni = pl.DataFrame({"ticker": ["AAPL", "AAPX"], "cik": [320193, 320193]})
    res = load_filings([APPLE_JSON], [], uni)
    assert set(res.accepted["ticker"]) == {"AAPL"} and res.accepted.height == 10
    assert res.flags.height == 10 and set(res.flags["flag"]) == {edgar.F_SHARED_CIK}


# ---------------------------------------------------------------- 3. truncated full-submission.txt
def test_a_truncated_full_submission_is_quarantined():
    res = load_filings([TRUNCATED], [TRUNCATED], UNIVERSE)
    assert res.accepted.height == 0
    assert res.quarantine.select("source_file", "source_row", "reason").rows() == [
        (
            "0000320193-23-000064/full-submission.txt",
            0,
            f"{edgar.R_TRUNCATED}: 1 of 67 declared documents, <DOCUMENT> 2 not closed, no </SEC-DOCUMENT> after its last document "
            "in 0000320193-23-000064/full-submission.txt (re-download it)",
        )
    ]
    balanced(res, [TRUNCATED], [TRUNCATED])


def test_a_truncated_submission_quarantines_its_filing_from_every_source():
    """The JSON's record of the same accession does not slip the filing in without its text."""
    paths = [APPLE_JSON, TRUNCATED]
    res = load_filings(paths, [TRUNCATED], UNIVERSE)
    assert "0000320193-23-000064" not in set(res.accepted["accession"])
    assert reasons_by_accession(res)["0000320193-23-000064"].startswith(f"{edgar.R_TRUNCATED}: 1 of 67 declared documents")
    assert res.accepted.height == 9
    balanced(res, paths, [TRUNCATED])


def _variant(tmp_path: Path, text: str) -> Path:
    d = tmp_path / "sec-edgar-filings" / "AAPL" / "10-Q" / "0000320193-23-000064"
    d.mkdir(parents=True)
    (d / "full-submission.txt").write_text(text)
    return tmp_path / "sec-edgar-filings"


CUT = "<p>1. I have reviewed this quarterly rep"
REST = "<p>1. I have reviewed this quarterly report.</p></body></html>\n</TEXT>\n</DOCUMENT>\n"


@pytest.mark.parametrize(
    "count, end, why",
    [
        ("2", "</SEC-DOCUMENT>\n", None),  # complete: accepted, with its text
        ("67", "</SEC-DOCUMENT>\n", "2 of 67 declared documents"),
        ("2", "", "no </SEC-DOCUMENT> after its last document"),
    ],
)
def test_declared_document_count_and_end_marker(tmp_path, count, end, why):
    text = TRUNCATED_FILE.read_text().replace("PUBLIC DOCUMENT COUNT:\t\t67", f"PUBLIC DOCUMENT COUNT:\t\t{count}")
    root = _variant(tmp_path, text.replace(CUT, REST) + end)
    res = load_filings([root], [root], UNIVERSE)
    if why is None:
        assert res.quarantine.height == 0 and "FORM 10-Q" in res.accepted["text"][0]
    else:
        assert res.accepted.height == 0
        assert res.quarantine["reason"].to_list() == [f"{edgar.R_TRUNCATED}: {why} in 0000320193-23-000064/full-submission.txt (re-download it)"]


def test_a_header_excerpt_is_read_as_a_header_and_its_cut_last_line_is_not_used(tmp_path):
    """The real sample keeps each submission's first 1,000 bytes (no body to be complete): its header
    loads. A line the cut ends inside is not read: here a CIK cut to "00003" would name another company."""
    real = (BAD / "sec-edgar-filings" / "AAPL" / "10-Q" / "0000320193-23-000064" / "full-submission.txt").read_text()
    res = load_filings([BAD / "sec-edgar-filings"], [BAD / "sec-edgar-filings"], UNIVERSE)
    assert "0000320193-23-000064" in set(res.accepted["accession"])
    cut = real[: real.index("CENTRAL INDEX KEY:")] + "CENTRAL INDEX KEY:\t\t\t00003"
    assert edgar.parse_submission_header(cut)["cik"] is None
    assert edgar.parse_submission_header(cut + "20193\n")["cik"] == 320193


# ---------------------------------------------------------------- 4. folder accession vs header accession
def test_a_folder_whose_accession_is_not_its_headers_is_quarantined_alone():
    """Folder 0000320193-23-000077 holds the real header of 0000320193-23-000064. Neither filing takes
    anything from that file: both load from the JSON alone, with their own times."""
    folders = BAD / "two_accessions" / "sec-edgar-filings"
    paths = [APPLE_JSON, folders]
    res = load_filings(paths, [folders], UNIVERSE)
    q = res.quarantine.filter(pl.col("reason").str.starts_with(edgar.R_TWO_ACCESSIONS))
    assert q.select("source_file", "source_row", "reason").rows() == [
        (
            "0000320193-23-000077/full-submission.txt",
            0,
            f"{edgar.R_TWO_ACCESSIONS}: folder 0000320193-23-000077, ACCESSION NUMBER 0000320193-23-000064, "
            "<SEC-DOCUMENT> 0000320193-23-000064 in 0000320193-23-000077/full-submission.txt; the file belongs to one filing: re-download it",
        )
    ]
    acc = {r["accession"]: r for r in res.accepted.iter_rows(named=True)}
    for a in ("0000320193-23-000064", "0000320193-23-000077"):
        assert acc[a]["acceptance_source"] == "submissions_json" and "two_accessions" not in acc[a]["source_file"]
        assert "0000320193-23-000077/full-submission.txt" not in acc[a]["source_file"]
    assert acc["0000320193-23-000077"]["public_time"] == dt.datetime(2023, 8, 3, 22, 4, 43, tzinfo=dt.timezone.utc)  # its own JSON time
    assert res.rows_in == 13 and res.accepted.height == 10
    balanced(res, paths, [folders])


def test_a_header_whose_two_accession_fields_disagree_is_quarantined(tmp_path):
    real = (BAD / "sec-edgar-filings" / "AAPL" / "10-Q" / "0000320193-23-000064" / "full-submission.txt").read_text()
    root = _variant(tmp_path, real.replace("ACCESSION NUMBER:\t\t0000320193-23-000064", "ACCESSION NUMBER:\t\t0000320193-23-000065"))
    res = load_filings([root], [], UNIVERSE)
    assert res.accepted.height == 0
    (why,) = res.quarantine["reason"].to_list()
    assert why.startswith(
        f"{edgar.R_TWO_ACCESSIONS}: folder 0000320193-23-000064, ACCESSION NUMBER 0000320193-23-000065, <SEC-DOCUMENT> 0000320193-23-000064"
    )
    balanced(res, [root])


# ---------------------------------------------------------------- the synthetic world trips none of them
def test_the_synthetic_worlds_filings_pass_every_crosscheck(tmp_path):
    from finrag_dagster.sources.synthetic import generate_world

    s = WorldSettings(seed=11, n_tickers=6, start=dt.date(2018, 1, 2), end=dt.date(2019, 3, 29), news_start=dt.date(2018, 5, 1))
    generate_world(s, tmp_path)
    raw = tmp_path / "raw"
    index = [str(raw / "sec" / "submissions" / "*.json"), str(raw / "sec" / "sec-edgar-filings")]
    text = [str(raw / "sec" / "sec-edgar-filings")]
    res = load_filings(index, text, load_universe(raw / "universe" / "tickers.csv"))
    assert res.accepted.height > 0 and res.quarantine.height == 0 and res.flags.height == 0
    balanced(res, index, text)
