"""The pipeline's own reader prompts, read back from a lake (benchmarks and the vLLM tests).

For each decision day (latest first): the day's anchors, the variant's retrieval context (passages
in prompt order), the evidence, the market-context card and the company names, built by
:func:`.prompt.build_prompt` as the loop builds them (the prompt's JSON schema has the context's IDs
as its ``ids`` enum). Needs the loop to have run for that variant (its ``contexts`` partitions).
"""

from __future__ import annotations

from pathlib import Path

from .reader.prompt import AnchorInfo, Prompt, build_prompt


def lake_prompts(lake_dir: str | Path, n: int, variant: str = "no_memory", cycle: bool = False) -> list[Prompt]:
    """Up to ``n`` prompts from the lake's latest decision days (anchor order within a day); with
    ``cycle`` exactly ``n``, the prompts repeated when the lake has fewer."""
    return [r.prompt for r in lake_requests(lake_dir, n, variant, cycle)]


def lake_requests(lake_dir: str | Path, n: int, variant: str = "no_memory", cycle: bool = False) -> list:
    """:func:`lake_prompts` as reader requests, with the embedded reader's structured input too."""
    from .tables import Lake

    lake = Lake(str(lake_dir))
    days = lake.materialized_dates("contexts", variant=variant)
    if not days:
        raise FileNotFoundError(f"no {variant} contexts in {lake.root}: run the loop (e.g. `make demo`) first")
    out: list = []
    for d in reversed(days):
        out += day_requests(lake, d, variant)
        if len(out) >= n:
            break
    if cycle and out:
        return [out[i % len(out)] for i in range(n)]
    return out[:n]


def day_requests(lake, day: str, variant: str, anchor_ids: list[str] | None = None) -> list:
    """The reader requests of one decision day's anchors (``anchor_ids`` only, when given) with the
    context ``variant`` retrieved for them, in anchor order: the prompts the loop built."""
    import polars as pl

    from .loop_io import evidence_items
    from .reader.backends import Request
    from .reader.embedded import ReaderInput

    uni = lake.read("universe")
    names = dict(zip(uni["ticker"], uni["company"]))
    a = lake.read("anchors", dates=[day]).sort("anchor_id")
    if anchor_ids is not None:
        a = a.filter(pl.col("anchor_id").is_in(anchor_ids))
    c = lake.read("contexts", dates=[day], variant=variant).filter(pl.col("anchor_id").is_in(a["anchor_id"].to_list()))
    cards = lake.read("context_cards", dates=[day])
    card = {t: (txt, risk) for t, txt, risk in zip(cards["ticker"], cards["card_text"], cards["risk_state"])}
    ev = evidence_items(lake, c["passage_id"].to_list())
    out = []
    for r in a.iter_rows(named=True):
        ctx = c.filter(pl.col("anchor_id") == r["anchor_id"]).sort("position")["passage_id"].to_list()
        company = names.get(r["ticker"], r["ticker"])
        info = AnchorInfo(r["anchor_id"], r["ticker"], company, r["headline"], r["summary"], day, r["event_type"], r["session"])
        items = [ev[p] for p in ctx]
        text, risk = card.get(r["ticker"], ("", ""))
        p = build_prompt(info, items, text)
        out.append(Request(p, ReaderInput(r["headline"], r["summary"], r["event_type"], tuple(zip(p.allowed_ids, items)), risk, day, (), company)))
    return out
