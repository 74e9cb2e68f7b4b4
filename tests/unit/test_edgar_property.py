"""Property: a clean submissions JSON and a clean ``full-submission.txt``, rewritten (line ends LF, CRLF
or CR; UTF-8, UTF-8 with a BOM, UTF-16 or Latin-1; fields reordered, given twice, left out or added),
either stop the EDGAR loader with a short error naming the actual cause, or every record is
accounted for (records in = accepted + quarantined, "in" counted here with ``json`` and a regex over
the ``<SEC-HEADER>``) and every accepted value equals the clean files'.

The fast tier runs a few dozen examples (a few seconds). The slow profile runs many more:

    FINRAG_HYPOTHESIS=slow .venv/bin/python -m pytest -q -p no:cacheprovider tests/unit/test_edgar_property.py
"""

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finrag_dagster.sources.base import SourceError
from finrag_dagster.sources.edgar import load_filings

# fast: the same 40 examples on every run (derandomized); slow: 1,500 fresh ones (about 25 s)
settings.register_profile("fast", max_examples=40, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=1500, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("FINRAG_HYPOTHESIS", "fast")

DATA = Path(__file__).resolve().parents[1] / "data"
CLEAN_JSON = DATA / "edgar_fetch" / "data.sec.gov" / "submissions" / "CIK0000320193.json"  # 12 real filings, 3.6 KB
CLEAN_SGML = DATA / "bad" / "edgar" / "sec-edgar-filings" / "AAPL" / "10-Q" / "0000320193-23-000006" / "full-submission.txt"  # a real header
UNIVERSE = pl.DataFrame({"ticker": ["AAPL"], "cik": [320193]})
ENCODINGS = ("utf-8", "utf-8-sig", "utf-16", "latin-1")
LINE_ENDS = ("\n", "\r\n", "\r")
# what a left-out JSON array or header line may leave empty in an accepted filing (the file no longer says it)
EMPTIED_BY = {
    "reportDate": ("report_date", "fiscal_period"),
    "items": ("items",),
    "CONFORMED PERIOD OF REPORT": ("report_date", "fiscal_period"),
    "FILED AS OF DATE": ("filed_date",),
}
SGML_LINES = ("<ACCEPTANCE-DATETIME>", "ACCESSION NUMBER:", "CONFORMED SUBMISSION TYPE:", "PUBLIC DOCUMENT COUNT:")
SGML_LINES += ("CONFORMED PERIOD OF REPORT:", "FILED AS OF DATE:", "DATE AS OF CHANGE:")


@dataclass
class Rewrite:
    """One rewritten pair of files, and what the rewrite may do to the loader's answer."""

    json_bytes: bytes
    sgml_bytes: bytes
    causes: list[str] = field(default_factory=list)  # words an error must name (empty: no error is allowed)
    emptied: set[str] = field(default_factory=set)  # columns an accepted filing may have lost


def _render(pairs, nl: str, indent: int, depth: int = 0) -> str:
    """JSON text of an object given as (key, value) pairs (a key may repeat); values that are lists of
    pairs are rendered the same way, others by ``json``."""
    pad = nl + " " * indent * (depth + 1) if indent else ""
    items = [
        f"{pad}{json.dumps(k, ensure_ascii=False)}: {_render(v, nl, indent, depth + 1) if isinstance(v, _Pairs) else json.dumps(v, ensure_ascii=False)}"
        for k, v in pairs
    ]
    return "{" + ",".join(items) + (nl + " " * indent * depth if indent else "") + "}"


class _Pairs(list):
    """An object's (key, value) pairs, in their order."""


@st.composite
def json_rewrites(draw, rw: Rewrite) -> str:
    doc = json.loads(CLEAN_JSON.read_text())
    recent = doc["filings"].pop("recent")
    keys = draw(st.permutations(list(recent)))
    pairs = _Pairs((k, recent[k]) for k in keys)
    change = draw(st.sampled_from(["none", "drop", "twice_same", "twice_other", "extra", "extra_short", "entry_twice"]))
    if change == "drop":
        k = draw(st.sampled_from(keys))
        pairs = _Pairs(p for p in pairs if p[0] != k)
        rw.causes += ["accessionNumber"] if k == "accessionNumber" else []
        rw.emptied |= set(EMPTIED_BY.get(k, ()))
    elif change in ("twice_same", "twice_other"):
        i = draw(st.integers(0, len(pairs) - 1))
        k, v = pairs[i]
        other = v if change == "twice_same" else list(reversed(v))
        pairs.insert(draw(st.integers(0, len(pairs))), (k, other))
        rw.causes += [repr(k)] if other != v else []
    elif change in ("extra", "extra_short"):
        n = len(recent["accessionNumber"]) - (change == "extra_short")
        pairs.append(("zzExtra", ["x"] * n))
    elif change == "entry_twice":  # the first filing listed again, accepted an hour earlier: the later (clean) time is kept
        for k, v in pairs:
            v.append(v[0])
        t = recent["acceptanceDateTime"][-1]
        recent["acceptanceDateTime"][-1] = t[:11] + f"{int(t[11:13]) - 1:02d}" + t[13:]
    top = _Pairs((k, v) for k, v in doc.items() if k != "filings")
    top.insert(draw(st.integers(0, len(top))), ("filings", _Pairs([("recent", pairs), *doc["filings"].items()])))
    if draw(st.booleans()):
        top.append(("noteAdded", "Société Générale d'Électricité"))  # not ASCII: Latin-1 bytes then differ from UTF-8's
    return _render(top, "\n", draw(st.sampled_from([0, 1, 2])))


@st.composite
def sgml_rewrites(draw, rw: Rewrite) -> str:
    lines = CLEAN_SGML.read_text().split("\n")
    top = [i for i, ln in enumerate(lines) if ln.startswith(SGML_LINES)]
    block = [lines[i] for i in top]
    block = draw(st.permutations(block))
    change = draw(st.sampled_from(["none", "drop", "twice_same", "twice_other", "extra"]))
    j = draw(st.integers(0, len(block) - 1))
    name = block[j].split(":")[0] if ":" in block[j] else "<ACCEPTANCE-DATETIME>"
    if change == "drop":
        rw.emptied |= set(EMPTIED_BY.get(name, ()))
        block.pop(j)
    elif change == "twice_same":
        block.insert(draw(st.integers(0, len(block))), block[j])
    elif change == "twice_other":  # the same field with another value: the filing is quarantined (or, unused, ignored)
        block.insert(draw(st.integers(0, len(block))), re.sub(r"\d(?=\D*$)", lambda m: str((int(m.group(0)) + 1) % 10), block[j]))
    elif change == "extra":
        block.insert(draw(st.integers(0, len(block))), "SOME NEW FIELD:\t\tits value")
    out = lines[: top[0]] + block + lines[top[-1] + 1 :]
    return "\n".join(out)


@st.composite
def rewrites(draw) -> Rewrite:
    rw = Rewrite(b"", b"")
    text_json, text_sgml = draw(json_rewrites(rw)), draw(sgml_rewrites(rw))
    nl_json, nl_sgml = draw(st.sampled_from(LINE_ENDS)), draw(st.sampled_from(LINE_ENDS))
    enc_json, enc_sgml = draw(st.sampled_from(ENCODINGS)), draw(st.sampled_from(ENCODINGS))
    rw.json_bytes = text_json.replace("\n", nl_json).encode(enc_json)
    rw.sgml_bytes = text_sgml.replace("\n", nl_sgml).encode(enc_sgml)
    if enc_json == "latin-1" and not text_json.isascii():
        rw.causes.append("UTF-8")
    return rw


# ------------------------------------------------------------------ the test's own reader
def _decode(data: bytes) -> str:
    for bom, enc in ((b"\xef\xbb\xbf", "utf-8-sig"), (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16")):
        if data.startswith(bom):
            return data.decode(enc)
    return data.decode("utf-8", errors="replace")


def _digits(acc: str) -> str:
    return re.sub(r"\D", "", acc)


def records_in(json_bytes: bytes, sgml_bytes: bytes) -> int:
    """Records the two files hold, read without the loader: the JSON's accession entries (a repeated one
    counts again) and one per ``<SEC-HEADER>``, a filing in both counted once."""
    accs = [_digits(a) for a in json.loads(_decode(json_bytes))["filings"]["recent"]["accessionNumber"]]
    text = _decode(sgml_bytes)
    headers = [m.group(1) for m in re.finditer(r"<SEC-HEADER>[^\n\r]*[\s\S]*?(?:ACCESSION NUMBER:\s*(\S+))", text)] or re.findall(
        r"<SEC-DOCUMENT>(\d{10}-\d{2}-\d{6})", text
    )
    assert len(re.findall(r"<SEC-HEADER>", text)) == 1 == len(headers)
    return len(set(accs) | {_digits(headers[0])}) + len(accs) - len(set(accs))


def _clean() -> dict[str, dict]:
    res = load_filings([CLEAN_JSON, CLEAN_SGML], [], UNIVERSE)
    return {r["accession"]: r for r in res.accepted.iter_rows(named=True)}


CLEAN = _clean()


def _write(root: Path, rw: Rewrite) -> tuple[Path, Path]:
    j = root / "CIK0000320193.json"
    j.write_bytes(rw.json_bytes)
    s = root / "sec" / "AAPL" / "10-Q" / "0000320193-23-000006" / "full-submission.txt"
    s.parent.mkdir(parents=True)
    s.write_bytes(rw.sgml_bytes)
    return j, s


@settings(settings.get_profile(PROFILE))
@given(rewrites())
def test_a_rewritten_file_is_loaded_whole_or_refused_by_name(rw):
    with tempfile.TemporaryDirectory() as d:
        j, s = _write(Path(d), rw)
        try:
            res = load_filings([j, s], [], UNIVERSE)
        except SourceError as e:
            msg = str(e)
            assert rw.causes, f"refused a file that only changed its form: {msg}"
            assert len(msg) < 300 and msg.startswith(j.name) and any(c in msg for c in rw.causes), msg
            return
    assert not rw.causes, f"loaded a file it should have refused ({rw.causes})"
    assert res.rows_in == records_in(rw.json_bytes, rw.sgml_bytes) == res.accepted.height + res.quarantine["rows"].sum()
    for row in res.accepted.iter_rows(named=True):
        want = CLEAN[row["accession"]]
        diff = {k: (row[k], want[k]) for k in want if row[k] != want[k] and not (k in rw.emptied and row[k] in (None, ""))}
        assert not diff, (row["accession"], diff)


def test_the_clean_files_load_whole():
    """The property's starting point: 10 of the 12 JSON filings (two are forms not used) and the header's."""
    res = load_filings([CLEAN_JSON, CLEAN_SGML], [], UNIVERSE)
    assert res.rows_in == 13 and res.accepted.height == 11 and sorted(res.quarantine["reason"]) == ["form not used", "form not used"]
    assert "0000320193-23-000006" in CLEAN


@pytest.mark.parametrize("enc", ENCODINGS)
@pytest.mark.parametrize("nl", LINE_ENDS)
def test_each_encoding_and_line_end_of_both_files_loads_the_same_filings(tmp_path, enc, nl):
    """Every combination once, whatever the property's draw: the same accepted rows as the clean files."""
    text_json = json.dumps(json.loads(CLEAN_JSON.read_text()), indent=1)
    rw = Rewrite(text_json.replace("\n", nl).encode(enc), CLEAN_SGML.read_text().replace("\n", nl).encode(enc))
    res = load_filings(list(_write(tmp_path, rw)), [], UNIVERSE)
    assert {r["accession"]: r for r in res.accepted.iter_rows(named=True)} == CLEAN
