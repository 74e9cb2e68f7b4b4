"""FNSPID news (CSV, gzipped CSV or parquet with the original column names) -> the ``news_raw`` table.

One module per step: columns (names, quarantine reasons, flags), clock (public time and precision
of each stamp), read (one file's scan and normalised rows), fields (title, summary), rows (the
checks, flags and accepted frame), fingerprint, stage (the staged rows read back), segment (one
file or its appended rows staged) and load (:func:`stage_news`, :func:`load_news`). The formats
and time rules: docs/time.md, "News (FNSPID)"; bad rows: docs/bad_inputs.md; staging: docs/ingest.md.
"""

from .clock import NEVER, NewsClock, minute_stats, news_public_ns, parse_news_times
from .columns import (
    F_NAIVE_TIME,
    F_REPAIRED,
    F_TITLE_FROM_URL,
    FNSPID_COLUMNS,
    R_AFTER_END,
    R_BAD_DATE,
    R_BEFORE_START,
    R_DUPLICATE,
    R_MISSING_DATE,
    R_NO_TICKER,
    R_NO_TITLE_URL,
    R_NOT_UNIVERSE,
    R_OUT_OF_CALENDAR,
    R_OVERSIZED,
    R_RAGGED,
)
from .fields import pick_summary, slug_title
from .fingerprint import settings_key
from .load import BATCH_BYTES, load_news, stage_news
from .read import news_source, normalize_news, read_news_file
from .rows import check_news_rows
from .stage import FileStage, NewsStage

__all__ = [
    "NewsClock",
    "NewsStage",
    "FileStage",
    "check_news_rows",
    "load_news",
    "minute_stats",
    "news_public_ns",
    "news_source",
    "normalize_news",
    "parse_news_times",
    "pick_summary",
    "read_news_file",
    "settings_key",
    "slug_title",
    "stage_news",
    # the reader's columns, reasons, flags and limits
    "BATCH_BYTES",
    "FNSPID_COLUMNS",
    "NEVER",
    "F_NAIVE_TIME",
    "F_REPAIRED",
    "F_TITLE_FROM_URL",
    "R_AFTER_END",
    "R_BAD_DATE",
    "R_BEFORE_START",
    "R_DUPLICATE",
    "R_MISSING_DATE",
    "R_NO_TICKER",
    "R_NO_TITLE_URL",
    "R_NOT_UNIVERSE",
    "R_OUT_OF_CALENDAR",
    "R_OVERSIZED",
    "R_RAGGED",
]
