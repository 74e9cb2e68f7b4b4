"""EDGAR filings (submissions JSON, SGML full submissions, sample parquets) -> ``filings_raw``.

Rows of one accession from several sources are merged; ``public_time`` is the latest known
acceptance time (conservative), never the filing date: a filing without an acceptance time is
quarantined. Sources that contradict themselves are never read silently. The formats read, the
merge and the ``rows_in`` count: docs/bad_inputs.md, "Filings (EDGAR)" and "`sources/edgar/`:
design notes"; the time rules: docs/time.md, "Filings (EDGAR)". One module per step: header,
body, periods, passages, the readers (records, submissions, full_submission, index_sources),
merge and loader; every loader name is importable from here. The downloader (``finrag fetch edgar``,
docs/edgar_fetch.md) is fetch_http (User-Agent, errors, rate limit), fetch_layout (what to fetch,
where it goes), fetch_client (requests, retries, atomic writes) and fetch (:class:`EdgarFetcher`),
whose names are importable from :mod:`.fetch` (not from here: the loaders need no HTTP client).
"""

from .body import html_to_text, submission_text
from .constants import (
    ACCEPTANCE_BEFORE_FILED_MAX_DAYS,
    DEFAULT_FYE,
    F_DATE_ONLY,
    F_SHARED_CIK,
    FORMS_USED,
    FYE_SLACK_DAYS,
    MAX_SUBMISSION_BYTES,
    NEEDED_ARRAYS,
    R_ACCEPTANCE_VS_FILED,
    R_CIK_VS_FILE,
    R_CORRUPT,
    R_DUPLICATE,
    R_FORM,
    R_HEADER_TWICE,
    R_MISSING_ARRAYS,
    R_NO_ACCESSION,
    R_NO_TICKER,
    R_NO_TIME,
    R_OUT_OF_CALENDAR,
    R_TICKER_VS_SOURCE,
    R_TRUNCATED,
    R_TWO_ACCESSIONS,
    R_UNEQUAL_ARRAYS,
    UNIQUE_HEADER_FIELDS,
)
from .full_submission import read_full_submission
from .header import ITEM_DESCRIPTIONS, parse_submission_header
from .index_sources import _read_records as _read_records
from .index_sources import read_filings_parquet
from .loader import _accepted_frame as _accepted_frame
from .loader import load_filings
from .merge import _acceptance_vs_filed as _acceptance_vs_filed
from .merge import _json_duplicates as _json_duplicates
from .merge import _merge_groups as _merge_groups
from .merge import report_date_in_text
from .passages import split_filing_passages
from .periods import fiscal_period, fiscal_year_quarter, period_in_text
from .records import FilingRecord
from .records import _acceptance_ns as _acceptance_ns
from .submissions import read_submissions_json

__all__ = [
    "load_filings",
    "split_filing_passages",
    "parse_submission_header",
    "submission_text",
    "html_to_text",
    "fiscal_period",
    "fiscal_year_quarter",
    "period_in_text",
    "read_submissions_json",
    "read_full_submission",
    "read_filings_parquet",
    "FORMS_USED",
    # the rest of the package's public names (reasons, flags, limits, the record type)
    "ACCEPTANCE_BEFORE_FILED_MAX_DAYS",
    "DEFAULT_FYE",
    "F_DATE_ONLY",
    "F_SHARED_CIK",
    "FYE_SLACK_DAYS",
    "MAX_SUBMISSION_BYTES",
    "NEEDED_ARRAYS",
    "R_ACCEPTANCE_VS_FILED",
    "R_CIK_VS_FILE",
    "R_CORRUPT",
    "R_DUPLICATE",
    "R_FORM",
    "R_HEADER_TWICE",
    "R_MISSING_ARRAYS",
    "R_NO_ACCESSION",
    "R_NO_TICKER",
    "R_NO_TIME",
    "R_OUT_OF_CALENDAR",
    "R_TICKER_VS_SOURCE",
    "R_TRUNCATED",
    "R_TWO_ACCESSIONS",
    "R_UNEQUAL_ARRAYS",
    "UNIQUE_HEADER_FIELDS",
    "ITEM_DESCRIPTIONS",
    "report_date_in_text",
    "FilingRecord",
]
