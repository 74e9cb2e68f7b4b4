"""The body text of an EDGAR submission: HTML / SGML documents to plain text, one paragraph per line;
the main document (its TYPE is the form type) plus EX-99.1 for 8-Ks.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser


class _TextExtractor(HTMLParser):
    """HTML -> plain text: block elements become line breaks, hidden/inline-XBRL headers dropped."""

    BLOCK = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "section", "ul", "ol", "page", "hr", "center", "title"}
    SKIP = {"script", "style", "head", "ix:header", "xbrl"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        elif tag in self.BLOCK:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_to_text(markup: str) -> str:
    """Plain text of an HTML / SGML document, one paragraph per line."""
    if re.search(r"<(html|body|div|p|font|table)\b", markup[:20000], re.IGNORECASE):
        ex = _TextExtractor()
        ex.feed(markup)
        ex.close()
        text = "".join(ex.parts)
    else:  # plain-text filing with SGML page/table markers
        text = re.sub(r"</?(PAGE|S|C|TABLE|CAPTION|FN|F\d+)>", "\n", markup, flags=re.IGNORECASE)
        text = re.sub(r"<[^>\n]{1,200}>", " ", text)
    text = text.replace("\xa0", " ").replace("\u200b", "")
    lines = [re.sub(r"[ \t\r\f\v]+", " ", ln).strip() for ln in text.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


_DOC = re.compile(r"<DOCUMENT>(.*?)</DOCUMENT>", re.DOTALL | re.IGNORECASE)
_DOC_TYPE = re.compile(r"<TYPE>\s*([^\s<]+)", re.IGNORECASE)
_DOC_TEXT = re.compile(r"<TEXT>(.*?)(?:</TEXT>|$)", re.DOTALL | re.IGNORECASE)


def submission_text(text: str, form_type: str) -> str:
    """Main document (TYPE == form type) plus EX-99.1 for 8-Ks, as plain text ("" if absent).

    The EX-99.1 exhibit follows the main document after a line ``EX-99.1``.
    """
    end = text.find("</SEC-HEADER>")
    if end < 0:
        return ""
    form = (form_type or "").upper()
    want = {form: "", **({"EX-99.1": "EX-99.1"} if form.startswith("8-K") else {})}
    found: dict[str, str] = {}
    for doc in _DOC.findall(text[end:]):
        m = _DOC_TYPE.search(doc)
        dtype = m.group(1).upper() if m else ""
        if dtype in want and dtype not in found:
            t = _DOC_TEXT.search(doc)
            found[dtype] = html_to_text(t.group(1)) if t else ""
    parts = []
    for dtype, marker in want.items():
        if found.get(dtype):
            parts.append((marker + "\n" if marker else "") + found[dtype])
    return "\n\n".join(parts)
