"""A news row's title and summary as the ``news_raw`` table holds them."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlparse

from ...core.text import sentences


def slug_title(url: str) -> str:
    """A readable title from a URL's last path segment ("" when there is none)."""
    seg = [s for s in urlparse(url).path.split("/") if s]
    if not seg:
        return ""
    slug = re.sub(r"\.(html?|php|aspx?)$", "", unquote(seg[-1]))
    slug = re.sub(r"[-_+]+", " ", slug)
    return re.sub(r"\s+", " ", slug).strip()


def pick_summary(summaries: tuple[str, ...], article: str) -> str:
    """First non-empty extractive summary, else the article's first two sentences, else ""."""
    for s in summaries:
        if s:
            return s
    return " ".join(sentences(article)[:2])


def _title(title: str, slug: bool, url: str) -> str:
    if title and slug:
        return unquote(title).strip()
    return title or slug_title(url)
