"""The source families the memory keeps its cells by (``memory.families``).

``seed000`` (the default) is seed 000's two broad families, a passage's ``source_family``: ``news``
and ``sec_filing``. ``fine`` is an extension beyond the paper (docs/method.md §4, "Finer source
families"): news by publisher class and filings by form and item,

* ``news:wire``, ``news:opinion``, ``news:aggregator`` — the publisher's class in a small editable
  mapping file (``finrag_dagster/data/publisher_classes.csv``, or ``memory.publisher_classes``);
  ``news:other`` — a publisher the file does not list (counted by :class:`FamilyMap`, never dropped);
* ``sec:8-K-2.02`` (an 8-K reporting Item 2.02, Results of Operations: the earnings release, all its
  passages), ``sec:8-K-other`` (the other 8-Ks),
  ``sec:10-Q``, ``sec:10-K`` (amendments with their form), ``sec:other`` (any other form).

A pure mapping: the same passage always gets the same family.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

SCHEMES = ("seed000", "fine")
SEED000 = ("news", "sec_filing")
PUBLISHER_CLASSES = ("wire", "opinion", "aggregator")
FINE = (
    "news:wire",
    "news:opinion",
    "news:aggregator",
    "news:other",
    "sec:8-K-2.02",
    "sec:8-K-other",
    "sec:10-Q",
    "sec:10-K",
    "sec:other",
)
DEFAULT_CLASSES_FILE = "publisher_classes.csv"


class PublisherClassesError(ValueError):
    """A publisher-class mapping file that cannot be used (names the file and line)."""


def scheme_families(scheme: str) -> tuple[str, ...]:
    """The families of ``scheme``, in the order the memory snapshot lists them."""
    if scheme == "seed000":
        return SEED000
    if scheme == "fine":
        return FINE
    raise ValueError(f"unknown memory.families {scheme!r}; choose from {SCHEMES}")


def _key(publisher: str | None) -> str:
    return (publisher or "").strip().lower()


def parse_publisher_classes(text: str, name: str) -> dict[str, str]:
    """publisher (trimmed, lower-case) -> class from the CSV ``text`` (header ``publisher,class``;
    ``#`` lines and blank lines skipped). An unknown class, a duplicate publisher, a row without two
    fields or a missing header raise :class:`PublisherClassesError` naming ``name`` and the line."""
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    header = False
    for no, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in row]
        if not header:
            if [c.lower() for c in cells] != ["publisher", "class"]:
                raise PublisherClassesError(f"{name}:{no}: expected the header 'publisher,class', got {','.join(cells)!r}")
            header = True
            continue
        if len(cells) != 2 or not cells[0]:
            raise PublisherClassesError(f"{name}:{no}: expected 'publisher,class', got {','.join(cells)!r}")
        pub, cls = cells[0], cells[1].lower()
        if cls not in PUBLISHER_CLASSES:
            raise PublisherClassesError(f"{name}:{no}: unknown class {cells[1]!r} for {pub!r}; choose from {', '.join(PUBLISHER_CLASSES)}")
        k = _key(pub)
        if k in seen:
            raise PublisherClassesError(f"{name}:{no}: publisher {pub!r} is already mapped on line {seen[k]}")
        seen[k] = no
        out[k] = cls
    if not header:
        raise PublisherClassesError(f"{name}: no 'publisher,class' header")
    return out


def load_publisher_classes(path: str | Path | None = None) -> dict[str, str]:
    """The mapping of ``path`` (a user's file), or the one shipped with the package when None."""
    if path is None:
        res = resources.files("finrag_dagster").joinpath("data", DEFAULT_CLASSES_FILE)
        return parse_publisher_classes(res.read_text(encoding="utf-8"), f"finrag_dagster/data/{DEFAULT_CLASSES_FILE}")
    p = Path(path)
    if not p.is_file():
        raise PublisherClassesError(f"{p}: memory.publisher_classes is not a file")
    return parse_publisher_classes(p.read_text(encoding="utf-8"), str(p))


def filing_family(form_type: str | None, item: str | None, text: str | None = None, filing_items: str | None = None) -> str:
    """The fine family of a filing passage. An 8-K is an earnings release (``sec:8-K-2.02``) when
    the filing reports Item 2.02 (``filing_items``, the filing's item codes, e.g. "2.02, 9.01"):
    every passage of it counts — the cover, Item 9.01 and the Exhibit 99.1 press release as well as
    Item 2.02 itself. Without the filing's items, the passage's own item decides, and for a filing
    known only from its index (one descriptive passage, no item) its text naming Item 2.02."""
    form = (form_type or "").strip().upper().removesuffix("/A")
    if form == "8-K":
        if filing_items is not None:
            is_202 = "2.02" in {c.strip() for c in filing_items.split(",")}
        else:
            is_202 = "2.02" in item if item else "Item 2.02" in (text or "")
        return "sec:8-K-2.02" if is_202 else "sec:8-K-other"
    if form in ("10-Q", "10-K"):
        return f"sec:{form}"
    return "sec:other"


def memory_family(
    scheme: str,
    source_family: str,
    publisher: str | None = None,
    form_type: str | None = None,
    item: str | None = None,
    classes: dict[str, str] | None = None,
    text: str | None = None,
    filing_items: str | None = None,
) -> str:
    """The memory family of one passage under ``scheme`` (``seed000``: its ``source_family``)."""
    if scheme == "seed000":
        return source_family
    if scheme != "fine":
        raise ValueError(f"unknown memory.families {scheme!r}; choose from {SCHEMES}")
    if source_family == "news":
        return "news:" + (classes or {}).get(_key(publisher), "other")
    if source_family == "sec_filing":
        return filing_family(form_type, item, text, filing_items)
    raise ValueError(f"unknown source_family {source_family!r}")


@dataclass
class FamilyMap:
    """passage_id -> memory family under one scheme, filled as passages become known; counts the
    news passages whose publisher the mapping file does not list (``unknown_publishers``)."""

    scheme: str = "seed000"
    classes: dict[str, str] = field(default_factory=dict)
    of: dict[str, str] = field(default_factory=dict)
    unknown_publishers: Counter = field(default_factory=Counter)

    @property
    def identity(self) -> bool:
        return self.scheme == "seed000"

    @property
    def families(self) -> tuple[str, ...]:
        return scheme_families(self.scheme)

    def add(self, rows: Iterable[tuple]) -> None:
        """Rows (passage_id, source_family, publisher, form_type, item, text[, filing_items]) not
        mapped yet (filing_items: the filing's item codes, None when unknown)."""
        for pid, fam, pub, form, item, text, *rest in rows:
            if pid in self.of:
                continue
            f = memory_family(
                self.scheme, fam, pub, form_type=form, item=item, classes=self.classes, text=text, filing_items=rest[0] if rest else None
            )
            if f == "news:other":
                self.unknown_publishers[(pub or "").strip() or "(none)"] += 1
            self.of[pid] = f

    def family(self, passage_id: str, source_family: str) -> str:
        """The passage's family (its source_family under seed000); under a finer scheme a passage
        never added is an error, not a silent fall-back to its broad family."""
        if self.identity:
            return source_family
        try:
            return self.of[passage_id]
        except KeyError:
            raise KeyError(f"memory.families = {self.scheme!r}: passage {passage_id!r} was never mapped to a family") from None
