"""How numbers and tables are written for people: one cell format, one markdown table."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence


def fmt(v, pct: bool = False) -> str:
    """A table cell: three decimals, or a percentage with one; "–" for a missing value."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{100 * v:.1f}%" if pct else f"{v:.3f}"


def md_row(cells: Iterable) -> str:
    return "|" + "|".join(f" {c} " if c != "" else " " for c in map(str, cells)) + "|"


def md_table(columns: Sequence, rows: Iterable[Sequence]) -> str:
    """A markdown table: a header, its rule, one line per row (cells as given, str() applied)."""
    return "\n".join([md_row(columns), "|" + "---|" * len(columns), *(md_row(r) for r in rows)])
