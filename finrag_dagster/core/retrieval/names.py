"""Companies named in a query the way people name them: symbols, names, short names and well-known
other names, without turning ordinary words into tickers.

Symbols match as an upper-case word, with a marker when the symbol is also an ordinary word or a
single letter; names from the universe file, distinctive short names and a small table of brand
and former names match as whole words; names that are ordinary words count only when written
capitalised and outside their ordinary phrases; share classes of one company are one company.
The rules: docs/retrieval.md, "`core/retrieval/names.py`: design notes" (each tested in
tests/unit/test_names.py, with a list of traps).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..text import ENGLISH_STOP_WORDS

# Ordinary English words that are also (part of) company names: as names they must be capitalised.
ORDINARY = frozenset(
    """
    a all now it on one key low new real see two big car eat fun good has home life love man play run save shop true well
    work cost fast team zoom meta apple target amazon monster booking align cadence dollar old trade texas american
    general first united national global international applied analog advanced automatic electronic intuitive
    constellation charter vertex ross lam gap best chip block square oracle visa match snap box
    """.split()
) | frozenset(ENGLISH_STOP_WORDS)

# Words that, right after an ordinary-word name, make it the ordinary word ("apple pie").
NOT_A_COMPANY_AFTER = frozenset("pie pies juice cider tree trees orchard orchards sauce crumble river rainforest basin jungle truck trucks".split())
# Words that, right before one, do the same ("Big Apple", "price target", "on target").
NOT_A_COMPANY_BEFORE: dict[str, frozenset[str]] = {
    "apple": frozenset({"big"}),
    "target": frozenset({"price", "on", "off", "sales", "earnings", "revenue", "inflation"}),
}

# Names people use that no universe file carries: brand and former names, by CIK (stable) and ticker.
OTHER_NAMES: dict[str, tuple[str, ...]] = {
    "cik:1652044": ("google",),  # Alphabet Inc.
    "GOOGL": ("google",),
    "GOOG": ("google",),
    "cik:1326801": ("facebook", "meta"),  # Meta Platforms, Inc. (Facebook, Inc. until 2021-10-28)
    "META": ("facebook", "meta"),
    "FB": ("facebook",),
    "cik:1018724": ("amazon.com",),
    "cik:1065280": ("netflix",),
    "cik:1045810": ("nvidia",),
    "cik:858877": ("cisco",),
    "cik:1065088": ("ebay",),
    "cik:1058057": ("marvell",),  # Marvell Technology Group Ltd. until 2021
    "cik:1835632": ("marvell",),  # Marvell Technology, Inc.
    "MRVL": ("marvell",),
    "cik:935703": ("family dollar",),  # Dollar Tree, Inc.: its Family Dollar segment and stores (2015-2025)
    "DLTR": ("family dollar",),
}

_MARKER = r"(?:\$|\(\s*|(?:nasdaq|nyse|ticker|symbol)\s*:?\s*)"


def _cik_key(cik) -> str | None:
    try:
        return f"cik:{int(cik)}"
    except (TypeError, ValueError):
        return None


@dataclass
class Company:
    key: str  # CIK when known, else the short name: one company whatever its share classes
    tickers: list[str]
    names: list[str] = field(default_factory=list)  # lower-case names that may match


@dataclass
class NameIndex:
    """Companies of a universe with the names that resolve to them."""

    companies: list[Company]
    symbols: dict[str, int]  # ticker -> company index

    @staticmethod
    def from_aliases(aliases: dict[str, list[str]], ciks: dict[str, object] | None = None) -> "NameIndex":
        """From ``{ticker: [lower-case names]}`` (the universe's ``aliases`` column) and CIKs."""
        ciks = ciks or {}
        by_key: dict[str, Company] = {}
        order: list[str] = []
        for t, names in aliases.items():
            names = [n.strip().lower() for n in names if n and n.strip()]
            shortest = min(names, key=len) if names else t.lower()
            key = _cik_key(ciks.get(t)) or f"name:{_base(shortest)}"
            c = by_key.get(key)
            if c is None:
                c = by_key[key] = Company(key, [], [])
                order.append(key)
            c.tickers.append(t)
            extra = list(OTHER_NAMES.get(key, ())) + list(OTHER_NAMES.get(t, ()))
            for n in [*names, *extra]:
                if n not in c.names:
                    c.names.append(n)
        companies = [by_key[k] for k in order]
        _add_first_words(companies)
        symbols = {t: i for i, c in enumerate(companies) for t in c.tickers}
        return NameIndex(companies, symbols)

    @staticmethod
    def from_universe(uni) -> "NameIndex":
        """From a ``universe`` table (polars): ticker, aliases ('|'-joined) and cik."""
        aliases = {t: [a for a in (al or "").split("|") if a] for t, al in zip(uni["ticker"].to_list(), uni["aliases"].to_list())}
        ciks = dict(zip(uni["ticker"].to_list(), uni["cik"].to_list())) if "cik" in uni.columns else {}
        return NameIndex.from_aliases(aliases, ciks)

    def find(self, text: str) -> list[tuple[int, int]]:
        """(position, company index) of every company named in ``text``."""
        found: list[tuple[int, int]] = []
        for t, ci in self.symbols.items():
            ordinary = len(t) == 1 or t.lower() in ENGLISH_STOP_WORDS  # COST, FAST, TEAM upper-case are tickers
            pat = rf"{_MARKER}{re.escape(t)}(?![\w])" if ordinary else rf"(?<![\w]){re.escape(t)}(?![\w])"
            flags = re.IGNORECASE if ordinary else 0  # markers in any case; the symbol itself upper-case
            for m in re.finditer(pat, text, flags):
                if ordinary and not m.group(0).endswith(t):
                    continue
                found.append((m.start(), ci))
        for ci, c in enumerate(self.companies):
            for name in c.names:
                if len(name) < 2:
                    continue
                for m in re.finditer(rf"(?<![\w.]){re.escape(name)}(?:['’]s)?(?![\w])", text, re.IGNORECASE):
                    if _plausible(text, m.start(), m.end(), name):
                        found.append((m.start(), ci))
        return sorted(found)

    def named(self, text: str) -> list[Company]:
        """The companies named in ``text``, in order of first mention."""
        out: list[int] = []
        for _, ci in self.find(text):
            if ci not in out:
                out.append(ci)
        return [self.companies[ci] for ci in out]

    def resolve(self, text: str) -> tuple[list[str], list[str]]:
        """(tickers, company keys) named in ``text``, in order of first mention."""
        cs = self.named(text)
        return [t for c in cs for t in c.tickers], [c.key for c in cs]


def _base(name: str) -> str:
    return re.sub(r"\s*\(.*?\)|[.,]", "", name).strip()


def _add_first_words(companies: list[Company]) -> None:
    """The first word of a multi-word short name, when unique among the companies and not ordinary."""
    firsts: dict[str, set[int]] = {}
    for i, c in enumerate(companies):
        for n in c.names:
            words = _base(n).split()
            if len(words) >= 2:
                firsts.setdefault(words[0], set()).add(i)
    for w, owners in firsts.items():
        if len(owners) == 1 and len(w) >= 4 and w not in ORDINARY and w.isalpha():
            c = companies[next(iter(owners))]
            if w not in c.names:
                c.names.append(w)


def _plausible(text: str, start: int, end: int, name: str) -> bool:
    """Whether a name match is the company: ordinary-word names must be capitalised and not sit in
    a phrase that makes them the ordinary word."""
    words = name.split()
    if not any(w in ORDINARY for w in words) or len(words) > 1 and not all(w in ORDINARY for w in words):
        return True  # a distinctive name (or a multi-word name with a distinctive word)
    mention = text[start:end]
    if not mention[:1].isupper():
        return False
    after = re.match(r"[\s-]+([\w-]+)", text[end:])
    if after and after.group(1).lower() in NOT_A_COMPANY_AFTER:
        return False
    before = re.search(r"([\w-]+)[\s-]+$", text[:start])
    if before and before.group(1).lower() in NOT_A_COMPANY_BEFORE.get(name, frozenset()):
        return False
    return True
