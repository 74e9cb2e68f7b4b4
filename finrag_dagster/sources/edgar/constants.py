"""EDGAR loader constants: the forms used, quarantine reasons (``R_*``), flags (``F_*``) and limits.

The reasons' wording is what quarantine rows say (docs/bad_inputs.md, "Filings (EDGAR)").
"""

from __future__ import annotations

FORMS_USED = ("8-K", "8-K/A", "10-Q", "10-Q/A", "10-K", "10-K/A")
R_NO_ACCESSION = "missing accession"
R_FORM = "form not used"
R_NO_TICKER = "ticker not in universe"
R_NO_TIME = "no acceptance time"
R_OUT_OF_CALENDAR = "public time outside the trading calendar"
R_UNEQUAL_ARRAYS = "submissions JSON arrays of unequal length"
R_MISSING_ARRAYS = "submissions JSON without the arrays a filing needs"  # followed by ": form"
NEEDED_ARRAYS = ("form", "acceptanceDateTime", "filingDate")  # what a filing's type, public time and its cross-check read
R_CORRUPT = "unreadable filing file"
R_ACCEPTANCE_VS_FILED = "acceptance time inconsistent with the filing date"
# EDGAR dates a filing accepted after 17:30 New York time (or on a holiday) on the next business
# day, so the acceptance's New York date is the filing date or a few calendar days before it (a
# Friday evening before a Monday holiday: 4); anything else is a source that contradicts itself.
ACCEPTANCE_BEFORE_FILED_MAX_DAYS = 4
# The largest full-submission.txt read (a 10-K with every exhibit is tens of MB); a larger file is
# quarantined unread, so one file cannot take the loader's memory
MAX_SUBMISSION_BYTES = 256 << 20
# Sources that contradict themselves about which filing or company they are (docs/bad_inputs.md):
R_CIK_VS_FILE = "submissions JSON cik contradicts its file name"
R_TICKER_VS_SOURCE = "universe ticker of the CIK contradicts the source's own ticker"
R_TRUNCATED = "full-submission.txt truncated"
R_TWO_ACCESSIONS = "full-submission.txt names two accessions"
R_HEADER_TWICE = "full-submission.txt header gives one of its fields twice"
# Header fields a submission has once (a filer's COMPANY DATA, FORM TYPE or FISCAL YEAR END repeat per filer)
UNIQUE_HEADER_FIELDS = ("ACCESSION NUMBER", "CONFORMED SUBMISSION TYPE", "PUBLIC DOCUMENT COUNT", "CONFORMED PERIOD OF REPORT", "FILED AS OF DATE")
F_SHARED_CIK = "shared_cik"
# An acceptance time given as a date only ("2021-12-15") is public at the end of that New York day
# (23:59:59), as a date-only news stamp is (docs/time.md), so it is decided on the next session
F_DATE_ONLY = "date_only_acceptance"
# A submissions JSON lists each filing once: a second entry of an accession is quarantined (the
# later acceptance time is kept: it never lets a decision see the filing early)
R_DUPLICATE = "accession listed twice in one submissions JSON"
DEFAULT_FYE = "1231"
FYE_SLACK_DAYS = 14  # 52/53-week fiscal years end up to a week either side of the nominal day
