"""FNSPID news columns, and the quarantine reasons (``R_*``) and flags (``F_*``) of news rows.

The reasons' wording is what quarantine rows say (docs/bad_inputs.md, "News (FNSPID)").
"""

FNSPID_COLUMNS = (
    "Date",
    "Article_title",
    "Stock_symbol",
    "Url",
    "Publisher",
    "Author",
    "Article",
    "Lsa_summary",
    "Luhn_summary",
    "Textrank_summary",
    "Lexrank_summary",
)
SUMMARY_COLUMNS = ("Lsa_summary", "Luhn_summary", "Textrank_summary", "Lexrank_summary")
# Columns kept in a quarantine row's ``raw`` JSON (the article body is left out: it can be MBs).
RAW_COLUMNS = ("Date", "Stock_symbol", "Article_title", "Url", "Publisher")
ROW_INDEX = "__source_row"

R_MISSING_DATE = "missing Date"
R_BAD_DATE = "unparseable Date"
R_NO_TICKER = "missing Stock_symbol"
R_NOT_UNIVERSE = "ticker not in universe"
R_NO_TITLE_URL = "missing title and url"
R_OUT_OF_CALENDAR = "public time outside the trading calendar"
R_AFTER_END = "decision day after the calendar's end (calendar.end)"
F_REPAIRED = "non-UTF-8 bytes replaced by U+FFFD"
R_DUPLICATE = "duplicate of an earlier row (same ticker, url, source_time)"
R_BEFORE_START = "decision day before the calendar's start (calendar.start)"
R_RAGGED = "ragged row"  # followed by ": 3 fields where the header has 11"
R_OVERSIZED = "record over the size limit, not read"  # followed by ": 209,715,200 bytes (limit 8,388,608)"
F_NAIVE_TIME = "naive_time"
F_TITLE_FROM_URL = "title_from_url"
