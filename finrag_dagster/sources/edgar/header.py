"""The SGML header of an EDGAR ``full-submission.txt``: accession, form, acceptance time, filer, items.

``<ACCEPTANCE-DATETIME>`` is US/Eastern wall-clock, converted to UTC (docs/time.md, "Filings (EDGAR)").
"""

from __future__ import annotations

import datetime as dt
import re

from ...core.calendar import eastern_to_utc
from .constants import UNIQUE_HEADER_FIELDS

# 8-K item numbers by the descriptions used in SGML headers (ITEM INFORMATION).
ITEM_DESCRIPTIONS = {
    "entry into a material definitive agreement": "1.01",
    "termination of a material definitive agreement": "1.02",
    "bankruptcy or receivership": "1.03",
    "mine safety - reporting of shutdowns and patterns of violations": "1.04",
    "material cybersecurity incidents": "1.05",
    "completion of acquisition or disposition of assets": "2.01",
    "results of operations and financial condition": "2.02",
    "creation of a direct financial obligation or an obligation under an off-balance sheet arrangement of a registrant": "2.03",
    "triggering events that accelerate or increase a direct financial obligation or an obligation under an off-balance sheet arrangement": "2.04",
    "costs associated with exit or disposal activities": "2.05",
    "material impairments": "2.06",
    "notice of delisting or failure to satisfy a continued listing rule or standard; transfer of listing": "3.01",
    "unregistered sales of equity securities": "3.02",
    "material modifications to rights of security holders": "3.03",
    "changes in registrant's certifying accountant": "4.01",
    "non-reliance on previously issued financial statements or a related audit report or completed interim review": "4.02",
    "changes in control of registrant": "5.01",
    "departure of directors or certain officers; election of directors; appointment of certain officers: compensatory arrangements of certain officers": "5.02",
    "amendments to articles of incorporation or bylaws; change in fiscal year": "5.03",
    "temporary suspension of trading under registrant's employee benefit plans": "5.04",
    "amendments to the registrant's code of ethics, or waiver of a provision of the code of ethics": "5.05",
    "change in shell company status": "5.06",
    "submission of matters to a vote of security holders": "5.07",
    "shareholder director nominations": "5.08",
    "regulation fd disclosure": "7.01",
    "other events": "8.01",
    "financial statements and exhibits": "9.01",
}


_HDR_FIELD = re.compile(r"^[ \t]*([A-Z][A-Z0-9 \-/]+?):[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_ACCEPT = re.compile(r"<ACCEPTANCE-DATETIME>\s*(\d{14})")
_SECDOC = re.compile(r"<SEC-DOCUMENT>\s*(\d{10}-\d{2}-\d{6})")


def _yyyymmdd(s: str | None) -> dt.date | None:
    s = (s or "").strip().replace("-", "")
    if len(s) < 8 or not s[:8].isdigit():
        return None
    try:
        return dt.date(int(s[:4]), int(s[4:6]), int(s[6:8]))
    except ValueError:
        return None


def _whole_lines(text: str) -> str:
    """The text up to its last line break: a header excerpt cut mid-line must not give a cut value."""
    return text if text.endswith("\n") else text[: text.rfind("\n") + 1]


def _item_number(desc: str) -> str:
    d = re.sub(r"\s+", " ", desc.strip().lower()).replace("\u2019", "'")
    if re.fullmatch(r"\d\.\d{2}", d):
        return d
    return ITEM_DESCRIPTIONS.get(d, "")


def parse_submission_header(text: str) -> dict:
    """Fields of an EDGAR SGML submission header.

    Parameters
    ----------
    text : str
        A ``full-submission.txt`` (or just its first bytes).

    Returns
    -------
    dict
        ``accession`` (str|None), ``form_type`` (str|None), ``acceptance_utc`` (pd.Timestamp UTC
        or None; the header's US/Eastern wall-clock converted), ``period_of_report`` and
        ``filed_date`` (date|None), ``cik`` (int|None, first filer), ``company`` (str|None),
        ``fiscal_year_end`` ("MMDD"|None), ``items`` (8-K item numbers, comma-separated, "" if none),
        ``repeated`` ("FIELD (a, b)" for each field of a submission's own given twice with different
        values, "; "-separated, or None).
    """
    end = text.find("</SEC-HEADER>")
    head = text[:end] if end >= 0 else _whole_lines(text)
    fields: dict[str, list[str]] = {}
    for k, v in _HDR_FIELD.findall(head):
        fields.setdefault(k.strip(), []).append(v.strip())

    def first(key: str) -> str | None:
        vals = [v for v in fields.get(key, []) if v]
        return vals[0] if vals else None

    acc = first("ACCESSION NUMBER")
    if not acc:
        m = _SECDOC.search(head)
        acc = m.group(1) if m else None
    m = _ACCEPT.search(head)
    accepted = None
    if m:
        try:
            accepted = eastern_to_utc(dt.datetime.strptime(m.group(1), "%Y%m%d%H%M%S"))
        except ValueError:
            accepted = None
    cik = first("CENTRAL INDEX KEY")
    items = [_item_number(v) for v in fields.get("ITEM INFORMATION", [])]
    fye = first("FISCAL YEAR END")
    return {
        "accession": acc,
        "form_type": first("CONFORMED SUBMISSION TYPE") or first("FORM TYPE"),
        "acceptance_utc": accepted,
        "period_of_report": _yyyymmdd(first("CONFORMED PERIOD OF REPORT")),
        "filed_date": _yyyymmdd(first("FILED AS OF DATE")),
        "cik": int(cik) if cik and cik.isdigit() else None,
        "company": first("COMPANY CONFORMED NAME"),
        "fiscal_year_end": fye if fye and re.fullmatch(r"\d{4}", fye) else None,
        "items": ",".join(i for i in items if i),
        "repeated": _repeated_fields(fields, _ACCEPT.findall(head)),
    }


def _repeated_fields(fields: dict[str, list[str]], stamps: list[str]) -> str | None:
    """The fields a submission has once (:data:`UNIQUE_HEADER_FIELDS`, the acceptance stamp) that its
    header gives twice with different values, as "FIELD (a, b)" joined by "; "; None when there is none."""
    given = {**{k: [v for v in fields.get(k, []) if v] for k in UNIQUE_HEADER_FIELDS}, "<ACCEPTANCE-DATETIME>": stamps}
    twice = [f"{k} ({', '.join(dict.fromkeys(v))})" for k, v in given.items() if len(set(v)) > 1]
    return "; ".join(twice) or None
