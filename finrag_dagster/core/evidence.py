"""The global evidence store (seed 000 §3.3): timestamped news and SEC filing passages.

News rows become one passage each (title + summary). Filings are split into item passages by a
form-aware splitter; a filing known only from its index (no text) becomes one descriptive passage
("Apple Inc. Form 8-K, Item 2.02 Results of Operations and Financial Condition"), as in seed 000
App. B. Every passage keeps the document's public_time (EDGAR acceptance time for filings).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .calendar import lookback_days
from .dedup import ClusterIndex, DupItem
from .embeddings import embed
from .progress import track
from .storage.lake import require_partitions, rows_on
from .storage.schemas import EVIDENCE
from .text import clean, stable_hash, title_key, truncate_chars

NEWS = "news"
SEC = "sec_filing"

ITEM_NAMES_8K = {
    "1.01": "Entry into a Material Definitive Agreement",
    "1.02": "Termination of a Material Definitive Agreement",
    "2.01": "Completion of Acquisition or Disposition of Assets",
    "2.02": "Results of Operations and Financial Condition",
    "2.03": "Creation of a Direct Financial Obligation",
    "2.05": "Costs Associated with Exit or Disposal Activities",
    "2.06": "Material Impairments",
    "3.02": "Unregistered Sales of Equity Securities",
    "5.02": "Departure or Appointment of Directors or Officers",
    "5.03": "Amendments to Articles of Incorporation or Bylaws",
    "5.07": "Submission of Matters to a Vote of Security Holders",
    "7.01": "Regulation FD Disclosure",
    "8.01": "Other Events",
    "9.01": "Financial Statements and Exhibits",
}

ITEM_NAMES_10K = {
    "Item 1": "Business",
    "Item 1A": "Risk Factors",
    "Item 1B": "Unresolved Staff Comments",
    "Item 1C": "Cybersecurity",
    "Item 2": "Properties",
    "Item 3": "Legal Proceedings",
    "Item 4": "Mine Safety Disclosures",
    "Item 5": "Market for Registrant's Common Equity",
    "Item 7": "Management's Discussion and Analysis",
    "Item 7A": "Quantitative and Qualitative Disclosures About Market Risk",
    "Item 8": "Financial Statements and Supplementary Data",
    "Item 9A": "Controls and Procedures",
    "Item 9B": "Other Information",
    "Item 10": "Directors, Executive Officers and Corporate Governance",
    "Item 11": "Executive Compensation",
    "Item 12": "Security Ownership of Certain Beneficial Owners and Management",
    "Item 13": "Certain Relationships and Related Transactions",
    "Item 14": "Principal Accountant Fees and Services",
    "Item 15": "Exhibits and Financial Statement Schedules",
}
# A 10-Q numbers its items again in Part II: "Item 1" there is Legal Proceedings, not the Financial Statements
ITEM_NAMES_10Q = {
    "Item 1": "Financial Statements",
    "Item 2": "Management's Discussion and Analysis",
    "Item 3": "Quantitative and Qualitative Disclosures About Market Risk",
    "Item 4": "Controls and Procedures",
    "Part II Item 1": "Legal Proceedings",
    "Part II Item 1A": "Risk Factors",
    "Part II Item 2": "Unregistered Sales of Equity Securities and Use of Proceeds",
    "Part II Item 3": "Defaults Upon Senior Securities",
    "Part II Item 4": "Mine Safety Disclosures",
    "Part II Item 5": "Other Information",
    "Part II Item 6": "Exhibits",
}


def filing_item(form_type: str | None, item: str | None, part: str | None) -> tuple[str | None, str]:
    """(item label, section name) of a splitter chunk: a 10-Q's Part II items are labelled "Part II Item N"
    (its items restart there); 10-K and 10-Q items are named ("Item 1A" -> "Risk Factors")."""
    form = (form_type or "").removesuffix("/A")
    if not item or not item.startswith("Item "):
        return item, ""
    if form == "10-Q":
        label = f"Part II {item}" if part == "II" else item
        return label, ITEM_NAMES_10Q.get(label, "")
    if form == "10-K":
        return item, ITEM_NAMES_10K.get(item, "")
    return item, ""


Splitter = Callable[[str, str, int], list[dict]]


def news_passages(news: pl.DataFrame, sectors: dict[str, str], max_chars: int) -> pl.DataFrame:
    """One passage per news row: passage_id = news_id, text = title + summary (truncated)."""
    rows = []
    for r in news.iter_rows(named=True):
        title = clean(r["title"])
        body = clean(r["summary"]) or clean(r["article"])[:600]
        text = truncate_chars(f"{title}. {body}".strip(" ."), max_chars) if body else title
        rows.append(
            {
                "passage_id": r["news_id"],
                "source_family": NEWS,
                "doc_id": r["news_id"],
                "ticker": r["ticker"],
                "sector": sectors.get(r["ticker"], "Unknown"),
                "public_time": r["public_time"],
                "time_precision": r["time_precision"],
                "form_type": None,
                "item": None,
                "fiscal_period": None,
                "url": r["url"],
                "title": title,
                "title_key": title_key(title),
                "text": text,
            }
        )
    return _frame(rows)


def describe_filing(company: str, form_type: str, items: str, fiscal_period: str | None, filed: str) -> str:
    """A one-line passage for a filing known only from its index entry."""
    parts = [f"{company} Form {form_type}"]
    codes = [c.strip() for c in (items or "").split(",") if c.strip()]
    if codes:
        parts.append(", ".join(f"Item {c} {ITEM_NAMES_8K.get(c, '')}".strip() for c in codes))
    if fiscal_period:
        parts.append(f"for {fiscal_period}")
    if filed:
        parts.append(f"filed {filed}")
    return ", ".join(parts) + "."


def filing_passages(filings: pl.DataFrame, sectors: dict[str, str], splitter: Splitter, max_words: int) -> pl.DataFrame:
    """Item passages of each filing (one descriptive passage when the text is not available)."""
    rows = []
    for r in filings.iter_rows(named=True):
        filed = r["filed_date"].isoformat() if r.get("filed_date") else ""
        head = f"{r['company']} {r['form_type']}"
        url = f"https://www.sec.gov/Archives/edgar/data/{r['cik']}/{r['accession'].replace('-', '')}/{r['accession']}-index.htm"
        chunks = splitter(r["text"], r["form_type"], max_words) if r["text"] else []
        if not chunks:
            chunks = [{"item": None, "text": describe_filing(r["company"], r["form_type"], r["items"], r["fiscal_period"], filed)}]
        for i, ch in enumerate(chunks):
            raw = ch.get("item")
            item, name = filing_item(r["form_type"], raw, ch.get("part"))
            title = f"{head} {item}" + (f" {name}" if name else "") if item else f"{head} filing"
            if r["fiscal_period"]:
                title += f" ({r['fiscal_period']})"
            rows.append(
                {
                    "passage_id": "F" + stable_hash(r["accession"], raw or "", i),  # ids as before the Part II labels
                    "source_family": SEC,
                    "doc_id": r["accession"],
                    "ticker": r["ticker"],
                    "sector": sectors.get(r["ticker"], "Unknown"),
                    "public_time": r["public_time"],
                    "time_precision": "second",
                    "form_type": r["form_type"],
                    "item": item,
                    "fiscal_period": r["fiscal_period"],
                    "url": url,
                    "title": title,
                    "title_key": title_key(title),
                    "text": clean(ch["text"]),
                }
            )
    return _frame(rows)


_BASE_COLS = [f.name for f in EVIDENCE.schema if f.name not in ("dup_cluster", "embedding")]


def _frame(rows: list[dict]) -> pl.DataFrame:
    schema = pl.from_arrow(EVIDENCE.schema.empty_table()).select(_BASE_COLS).schema
    return pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)


def embedding_text(df: pl.DataFrame) -> list[str]:
    """What the dense model sees: the passage text (news text already starts with its title)."""
    return [t if fam == NEWS else f"{title}. {t}" for fam, title, t in zip(df["source_family"], df["title"], df["text"])]


def dup_items(df: pl.DataFrame, with_cluster: bool) -> list[DupItem]:
    """Passages as MinHash items ordered by (public_time, passage_id)."""
    ns = df["public_time"].dt.epoch("ns").to_list()
    cl = df["dup_cluster"].to_list() if with_cluster else [None] * df.height
    return [DupItem(p, (t, p), txt, c) for p, t, txt, c in zip(df["passage_id"], ns, df["text"], cl)]


def cluster_day(day_passages: pl.DataFrame, index: ClusterIndex) -> pl.DataFrame:
    """A day's passages in (public_time, passage_id) order with their dup_cluster (via the look-back
    index, which the day's passages then join)."""
    dupes = day_passages["passage_id"].is_duplicated()
    if dupes.any():
        raise ValueError(f"duplicate passage ids: {day_passages.filter(dupes)['passage_id'].unique().to_list()[:5]}")
    day_passages = day_passages.sort(["public_time", "passage_id"])
    clusters = index.assign(dup_items(day_passages, with_cluster=False))
    return day_passages.with_columns(pl.Series("dup_cluster", [clusters[p] for p in day_passages["passage_id"]], dtype=pl.Utf8))


def with_embeddings(days: list[pl.DataFrame], batch_size: int, max_seq_length: int) -> list[pl.DataFrame]:
    """Each day's clustered passages with their MiniLM embedding, the days' texts encoded in one call:
    batches of equal-length texts are fuller than one day's, and a vector depends only on its own
    text (core/embeddings.py), so the bytes are a day-by-day run's."""
    vecs = embed([t for df in days for t in embedding_text(df)], batch_size=batch_size, max_seq_length=max_seq_length)
    out, i = [], 0
    for df in days:
        out.append(df.with_columns(pl.Series("embedding", vecs[i : i + df.height], dtype=pl.Array(pl.Float32, 384))))
        i += df.height
    return out


EMBED_BLOCK = 2000  # passages embedded per call in a range run (memory stays bounded; a crash loses at most a block's days)


def embedding_matrix(df: pl.DataFrame) -> np.ndarray:
    """The evidence table's embedding column as an (n, 384) float32 matrix."""
    if df.height == 0:
        return np.zeros((0, 384), dtype=np.float32)
    return df["embedding"].to_numpy().astype(np.float32, copy=False)


def pit_violations(lake, cal, table: str, days: list[str], time_col: str = "public_time") -> list[str]:
    """Point-in-time: "D: n" for each partition D of ``table`` holding n rows outside
    close(D-1) < time <= decision_time(D) = close(D); empty when every row belongs to its day."""
    bad = []
    for d in days:
        df = lake.read(table, dates=[d], columns=[time_col])
        if df.height == 0:
            continue
        i = cal.session_index(d)
        hi = int(cal.closes_ns[i])
        lo = int(cal.closes_ns[i - 1]) if i > 0 else -(2**62)
        t = df[time_col].dt.epoch("ns").to_numpy()
        n_bad = int(np.sum((t > hi) | (t <= lo)))
        if n_bad:
            bad.append(f"{d}: {n_bad}")
    return bad


@dataclass
class EvidenceRun:
    """What :func:`write_evidence` wrote: rows per day, passages per source family, a preview."""

    counts: dict[str, int] = field(default_factory=dict)
    by_family: dict[str, int] = field(default_factory=lambda: {"news": 0, "sec_filing": 0})
    preview: pl.DataFrame | None = None


def write_evidence(s, lake, cal, days: list[str], splitter: Splitter, log: Callable[[str], None] | None = None) -> EvidenceRun:
    """The evidence of ``days`` (in order): each day's news and filing passages, clustered against
    the passages of the look-back sessions before it (``s.evidence.dup_lookback_sessions``, read
    back from the lake, so they must be materialised) and embedded; one partition per day.
    ``s`` is the Settings object, ``splitter`` the filing splitter (sources/edgar/)."""
    es = s.evidence
    uni = lake.read("universe")
    sectors = dict(zip(uni["ticker"], uni["sector"]))
    hist_days = lookback_days(cal, days[0], es.dup_lookback_sessions, s.calendar.start)
    require_partitions(lake, "evidence", hist_days)
    history = lake.read("evidence", dates=hist_days, columns=["passage_id", "public_time", "text", "dup_cluster"])
    index = ClusterIndex(es.dup_threshold, es.minhash_perm)
    index.add_history(dup_items(history, with_cluster=True))
    news = lake.read("news_raw", dates=days)
    filings = lake.read("filings_raw", dates=days)
    run = EvidenceRun()
    block: list[tuple[str, pl.DataFrame]] = []  # clustered days waiting for their embeddings

    def write_block() -> None:
        for (d, _), ev in zip(block, with_embeddings([df for _, df in block], es.embed_batch_size, es.embed_max_seq_length)):
            _, run.counts[d] = lake.write("evidence", ev, date=d)
            for fam, n in ev.group_by("source_family").len().rows():
                run.by_family[fam] += n
            if run.preview is None and ev.height:
                run.preview = ev
        block.clear()

    for d in track(days, len(days), "evidence (dedup + embedding)", log=log, every=20):
        i = cal.session_index(d)
        if i - es.dup_lookback_sessions - 1 >= 0:
            index.evict_before((int(cal.closes_ns[i - es.dup_lookback_sessions - 1]) + 1, ""))
        passages = pl.concat(
            [
                news_passages(rows_on(news, d), sectors, es.news_text_max_chars),
                filing_passages(rows_on(filings, d), sectors, splitter, es.passage_max_words),
            ]
        )
        block.append((d, cluster_day(passages, index)))  # the dedup needs the days in order; the embedding does not
        if sum(df.height for _, df in block) >= EMBED_BLOCK:
            write_block()
    write_block()
    return run
