"""The HTML report: seed 000's tables, Figure 2, the memory heatmap, label mix and citation validity.

Self-contained (plots are inline PNGs), rendered from a jinja2 template. Every table says which
split and lake it came from. :func:`write_report` gathers the tables and figures from the lake
and writes ``reports/finrag_report.html`` beside the lake (:func:`report_path`).
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl
from jinja2 import Environment, select_autoescape

from .. import families
from ..calendar import nyse
from ..formatting import fmt
from ..memory.families import FINE, SEED000
from ..settings import HORIZON_KEYS
from ..storage.lake import Lake
from .changes import CHANGE_COLUMNS, change_cells, change_sentence, family_rows, memory_changes, reach_sentence
from .experience import task_tables, tree_tables
from .tables import LONG_SCHEMA, METRICS, PCT, PORTFOLIO, VARIANT_LABEL, table2_rows, table_cells

if TYPE_CHECKING:
    from ..settings import Settings

TEMPLATE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>finrag report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2rem}
table{border-collapse:collapse;margin:.6rem 0 1.4rem;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .55rem;text-align:right}th:first-child,td:first-child{text-align:left}
th{background:#f3f3f3} img{max-width:100%} .note{color:#555;font-size:.88rem}
</style></head><body>
<h1>finrag report</h1>
<p class="sub">lake <code>{{ lake }}</code> · generated from the lake's tables · splits {{ splits }}</p>
{% for n in notes %}<p class="note">{{ n }}</p>{% endfor %}
{% for t in tables %}
<h2>{{ t.title }}</h2>
{% if t.note %}<p class="note">{{ t.note }}</p>{% endif %}
{% if t.rows %}
<table><tr>{% for c in t.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for r in t.rows %}<tr>{% for v in r %}<td>{{ v }}</td>{% endfor %}</tr>{% endfor %}</table>
{% else %}<p class="note">no rows (not materialised for this split)</p>{% endif %}
{% endfor %}
{% for f in figures %}
<h2>{{ f.title }}</h2>{% if f.note %}<p class="note">{{ f.note }}</p>{% endif %}
<img alt="{{ f.title }}" src="data:image/png;base64,{{ f.png }}">
{% endfor %}
</body></html>
"""


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def cumulative_figure(daily: pl.DataFrame, split: str) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = daily.filter(pl.col("split") == split)
    if d.height == 0:
        return None
    fig, ax = plt.subplots(figsize=(10, 4.2))
    for (s,), g in sorted(d.group_by(["strategy"]), key=lambda x: x[0][0]):
        g = g.sort("date")
        ax.plot(g["date"].to_list(), (np.cumprod(1 + g["net"].to_numpy()) - 1) * 100, label=s, lw=1.4)
    ax.set_ylabel("cumulative net return, %")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return _png(fig)


def memory_heatmap(snap: pl.DataFrame) -> str | None:
    """û per (family, event type, horizon) cell over time (weekly), from memory_snapshot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if snap.height == 0:
        return None
    snap = snap.with_columns(pl.col("date").dt.truncate("1w").alias("week"))
    weekly = snap.group_by(["week", "source_family", "event_type", "horizon"]).agg(pl.col("u_hat").last(), pl.col("n").last())
    have = set(weekly["source_family"].to_list())
    # seed 000's two families, or a finer scheme's (memory.families, memory/families.py) in its order
    fams = [f for f in (*SEED000, *FINE) if f in have] + sorted(have - {*SEED000, *FINE})
    ncol = max(2, len(fams)) if len(fams) <= 3 else 3
    nrow = -(-len(fams) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(6 * ncol, 4.5 * nrow), sharey=True, squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(fams) :]:
        ax.set_visible(False)
    for ax, fam in zip(axes, fams):
        w = weekly.filter(pl.col("source_family") == fam).with_columns((pl.col("event_type") + " · " + pl.col("horizon")).alias("cell"))
        cells = sorted(w["cell"].unique().to_list())
        weeks = sorted(w["week"].unique().to_list())
        grid = np.full((len(cells), len(weeks)), np.nan)
        ci = {c: i for i, c in enumerate(cells)}
        wi = {x: i for i, x in enumerate(weeks)}
        for c, x, u in zip(w["cell"], w["week"], w["u_hat"]):
            grid[ci[c], wi[x]] = u
        im = ax.imshow(grid, aspect="auto", cmap="RdBu", vmin=0.3, vmax=0.7)
        ax.set_title(f"{fam}: û (0.5 = neutral prior)")
        ax.set_yticks(range(len(cells)), cells, fontsize=7)
        step = max(1, len(weeks) // 8)
        ax.set_xticks(range(0, len(weeks), step), [weeks[i].isoformat() for i in range(0, len(weeks), step)], rotation=45, fontsize=7)
    fig.colorbar(im, ax=list(axes[: len(fams)]), shrink=0.8)
    return _png(fig)


def learned_vs_planted_figure(snap: pl.DataFrame, planted: pl.DataFrame) -> str | None:
    """Learned û per (event type, horizon) cell over time, each family against its planted utility
    (the embedded world's truth/source_utility.parquet): what seed 000's memory is meant to learn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    snap = snap.filter(pl.col("source_family").is_in(list(SEED000)))
    if snap.height == 0 or planted.height == 0:
        return None
    daily = snap.group_by(["date", "source_family", "event_type", "horizon"]).agg(pl.col("u_hat").last()).sort("date")
    types = [c for c in dict.fromkeys(planted["event_type"].to_list()) if c in set(daily["event_type"].to_list())]
    hs = sorted(set(daily["horizon"].to_list()), key=lambda h: int(h.rstrip("D")))
    fig, axes = plt.subplots(len(types), len(hs), figsize=(4.2 * len(hs), 2.3 * len(types)), sharex=True, sharey=True, squeeze=False)
    colours = dict(zip(SEED000, ("tab:blue", "tab:orange")))
    for i, c in enumerate(types):
        for j, h in enumerate(hs):
            ax = axes[i][j]
            for fam in SEED000:
                g = daily.filter((pl.col("source_family") == fam) & (pl.col("event_type") == c) & (pl.col("horizon") == h))
                if g.height:
                    ax.plot(g["date"].to_list(), g["u_hat"].to_list(), color=colours[fam], lw=1.2, label=f"{fam} û")
                p = planted.filter((pl.col("source_family") == fam) & (pl.col("event_type") == c) & (pl.col("horizon") == h))
                if p.height:
                    ax.axhline(p["planted"][0], color=colours[fam], ls="--", lw=1, label=f"{fam} planted")
            ax.set_title(f"{c} · {h}", fontsize=8)
            ax.tick_params(labelsize=7)
            ax.tick_params(axis="x", rotation=45)
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return _png(fig)


def label_mix_figure(t1: pl.DataFrame) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if t1.height == 0:
        return None
    fig, ax = plt.subplots(figsize=(8, 3.2))
    x = np.arange(t1.height)
    width = 0.27
    for k, h in enumerate(h.lower() for h in HORIZON_KEYS):
        bottom = np.zeros(t1.height)
        for lab, color in (("pos", "#2a9d8f"), ("zero", "#bbbbbb"), ("neg", "#e76f51")):
            v = t1[f"{lab}_{h}"].fill_null(0).to_numpy()
            ax.bar(x + (k - 1) * width, v, width, bottom=bottom, color=color, label=f"{lab}" if k == 0 else None)
            bottom += v
    ax.set_xticks(x, [f"{s}\n1D · 3D · 5D" for s in t1["split"].to_list()])
    ax.set_ylabel("share of labels")
    ax.legend(fontsize=8)
    return _png(fig)


def citation_figure(valid: pl.DataFrame) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if valid.height == 0:
        return None
    fig, ax = plt.subplots(figsize=(10, 3.2))
    for (v,), g in sorted(valid.group_by(["variant"]), key=lambda x: x[0][0]):
        g = g.sort("month")
        ax.plot(g["month"].to_list(), g["valid_citation_rate"].to_list(), label=v, lw=1)
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("valid-citation rate")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    return _png(fig)


def render(lake: Lake, out: Path, splits: dict, tables: list[dict], figures: list[dict], notes: list[str] = ()) -> Path:
    env = Environment(autoescape=select_autoescape(["html"]))
    html = env.from_string(TEMPLATE).render(
        lake=lake.location(),
        splits=", ".join(f"{k} {a}..{b}" for k, (a, b) in splits.items()),
        tables=tables,
        figures=[f for f in figures if f.get("png")],
        notes=list(notes),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(html)
    tmp.replace(out)
    return out


def universe_note(membership: str) -> str:
    """What the report says about survivorship."""
    if membership:
        return f"Universe: point in time from the membership file {membership}; a ticker has anchors only on decision days when it was a member."
    return (
        "Universe: today's ticker list applied to every past day (survivorship bias: companies delisted, "
        "merged or dropped before today are missing). Configure sources.membership (ticker,start,end) "
        "for a point-in-time universe."
    )


def valid_citation_by_month(lake: Lake, variants: list[str]) -> pl.DataFrame:
    frames = []
    for v in variants:
        o = lake.read("reader_outputs", variant=v, columns=["valid_ids"])
        if o.height == 0:
            continue
        frames.append(
            o.with_columns(pl.col("date").dt.truncate("1mo").alias("month"), (pl.col("valid_ids").list.len() > 0).alias("ok"))
            .group_by("month")
            .agg(pl.col("ok").mean().alias("valid_citation_rate"))
            .with_columns(pl.lit(v).alias("variant"))
        )
    return pl.concat(frames) if frames else pl.DataFrame()


def memory_note(credit: str, scheme: str) -> str:
    """What the report says when the source memory runs an extension beyond seed 000 (empty for the
    paper's own: "cited_correct" credit over the two families "seed000")."""
    parts = []
    if credit != "cited_correct":
        parts.append(f"memory.credit = {credit!r} (each passage credited by its own stance against the matured label)")
    if scheme != "seed000":
        parts.append(f"memory.families = {scheme!r} (news by publisher class, filings by form and item)")
    if not parts:
        return ""
    return (
        "Source memory: an extension beyond seed 000 (Point-in-Time Financial RAG, §3.5 and App. C), "
        + "; ".join(parts)
        + ". The memory rows of Tables 2-4 and 6 and the heatmap are this extension's, not the paper's method."
    )


def world_note(s: Settings) -> str:
    """Which world the report's numbers come from (settings.sources.kind); for the embedded one, why its Sharpe ratios are not market-like."""
    if s.sources.kind == "files":
        paths = ", ".join([*s.sources.news[:2], *s.sources.prices[:2]]) or "(none listed)"
        return f"Data: your files (sources.kind = files; news and prices from {paths}), with {s.sources.market_ticker} as the market proxy."
    w = s.world
    return (
        f"Data: the embedded synthetic world (seed {w.seed}, {w.n_tickers} tickers in {w.n_sectors} sectors), generated, not market data. "
        "Its Sharpe ratios are not market-like: every event carries a planted abnormal return over the five sessions after it, "
        "in a direction the news' tone gives away more often than not (docs/synthetic_world.md), so a reader of the anchor trades a "
        "planted signal; Table 4 charges a 10 bps one-way turnover cost but no spread or market impact."
    )


def changes_table(changes: tuple[pl.DataFrame, dict]) -> dict:
    """What each memory variant changed against its no-memory twin on the test split (counts, Table 2's metrics on the changed anchors, reach)."""
    summary, reach = changes
    rows = family_rows(summary)
    note = (
        "Each memory variant against its no-memory twin (source_memory, top5_all_source and the shuffles against no_memory; "
        "source_memory_toe against toe), anchor by anchor: contexts whose top-5 set changed, answers with a horizon's signal changed, "
        "and each Table 2 metric on the changed anchors as memory / twin. A memory row equal to its twin's changed no answer. "
        + reach_sentence(reach)
    )
    return {"title": "What the memory changed (test split)", "columns": ["", *CHANGE_COLUMNS], "rows": change_cells(rows), "note": note}


def explain_tables(s: Settings, lake: Lake, per: pl.DataFrame, k: int = 3) -> list[dict]:
    """`finrag explain`'s view of up to ``k`` test anchors where a memory variant and its twin disagree (seed 000 eq. 6 per passage); none when they never do."""
    from ..explain import anchor_table, disagreeing, explain_anchor

    return [anchor_table(explain_anchor(s, lake, nyse(), a, [v, t])) for a, v, t in disagreeing(per, k)]


def report_path(s: Settings) -> Path:
    """Where the report is written: ``reports/finrag_report.html`` beside the lake folder (inside the
    local working folder when the lake is on object storage)."""
    if s.lake_uri:
        return s.lake_dir / "reports" / "finrag_report.html"
    return s.lake_dir.parent / "reports" / "finrag_report.html"


def _table(df: pl.DataFrame, title: str, rows: list[str], cols: list[str], pct=frozenset(), note: str = "") -> dict:
    return {"title": title, "columns": ["", *cols], "rows": table_cells(df, rows, cols, pct), "note": note}


def _table1(t1: pl.DataFrame) -> dict:
    """Table 1 (seed 000): the benchmark audit and split usage."""
    return {
        "title": "Table 1. Benchmark audit and split usage",
        "columns": ["split", "days", "#anchors", "anchors/day", "active ticker-days", "SEC cov.", *[f"{h} +1/0/-1" for h in HORIZON_KEYS]],
        "rows": [
            [
                r["split"],
                f"{r['first_day']}..{r['last_day']}",
                r["anchors"],
                fmt(r["anchors_per_day"]),
                r["active_ticker_days"],
                fmt(r["sec_coverage"], True),
                *["/".join(fmt(r[f"{k}_{h.lower()}"], True) for k in ("pos", "zero", "neg")) for h in HORIZON_KEYS],
            ]
            for r in t1.sort("split_order").iter_rows(named=True)
        ],
        "note": "SEC cov. = share of anchors whose candidate pool holds at least one SEC passage; label mix over the anchors' ticker-days.",
    }


def _test_tables(test: pl.DataFrame, memory: str = "") -> list[dict]:
    """Tables 2-4 (seed 000) of the test split: prediction quality, validity checks, portfolio
    (``memory``: the note of :func:`memory_note` under Tables 2 and 3)."""
    t3rows = [VARIANT_LABEL[f] for f in families.rows_of("validity")]
    t4rows = sorted(set(test.filter(pl.col("table") == "Table 4")["row"].to_list()))
    return [
        _table(
            test.filter(pl.col("table") == "Table 2"), "Table 2. Event-level prediction quality (test split)", table2_rows(test), METRICS, note=memory
        ),
        _table(
            test.filter(pl.col("table") == "Table 3"),
            "Table 3. Source-memory validity checks (test split, mean ± std over shuffles)",
            t3rows,
            ["Non-neutral F1", "Macro-F1", "Rank IC"],
            note=memory,
        ),
        _table(
            test.filter(pl.col("table") == "Table 4"),
            "Table 4. Portfolio diagnostic from 3D stock-day signals (test split, net of 10 bps turnover cost)",
            t4rows,
            PORTFOLIO,
            PCT,
        ),
    ]


def _table6(s: Settings, sens: pl.DataFrame) -> dict:
    """Table 6 (seed 000): validation sensitivity, with the selected lambda/delta and what the test split used."""
    srows = [r for r in dict.fromkeys(sens["row"].to_list()) if r != "selected"] if sens.height else []
    sel = sens.filter(pl.col("row") == "selected")
    note = ""
    if sel.height:
        lam = sel.filter(pl.col("metric") == "lambda")["value"][0]
        dl = sel.filter(pl.col("metric") == "delta")["value"][0]
        used = (
            "the test split above ran with it (memory.test_params = selected)"
            if s.memory.test_params == "selected"
            else f"the test split above ran with lambda={s.memory.lam}, delta={s.memory.delta} (memory.test_params = settings)"
        )
        note = f"selected on validation (labels matured before the test split): lambda={lam:.2f}, delta={dl:.2f}; {used}."
    return _table(
        sens, "Table 6. Validation sensitivity to source-memory strength", srows, ["Non-neutral F1", "Macro-F1", "Rank IC", "Sharpe"], note=note
    )


def _figures(lake: Lake, t1: pl.DataFrame, planted: pl.DataFrame | None = None) -> list[dict]:
    """Figure 2, the memory heatmap, learned against planted utility (embedded world), the label mix, the valid-citation rate per month."""
    daily = lake.read("portfolio_daily") if lake.partition_files("portfolio_daily") else pl.DataFrame()
    snap = (
        lake.read("memory_snapshot", variant="source_memory") if lake.partition_files("memory_snapshot", variant="source_memory") else pl.DataFrame()
    )
    return [
        {"title": "Figure 2. Cumulative net returns, test split", "png": cumulative_figure(daily, "test") if daily.height else None},
        {
            "title": "Source-memory utilities over time (source_memory variant)",
            "png": memory_heatmap(snap),
            "note": "û per cell at the end of each week; resets at each split start.",
        },
        {
            "title": "Learned against planted source utility (source_memory variant)",
            "png": learned_vs_planted_figure(snap, planted) if planted is not None else None,
            "note": "Solid: û of each family per cell at the end of each day (resets at each split start); dashed: the world's "
            "planted probability that one document's tone agrees with the event's direction. û is P(the reader was right | it "
            "cited the family), which a reader weighing several passages pulls towards consensus (docs/feedback_loop.md).",
        },
        {"title": "Label mix per split", "png": label_mix_figure(t1) if t1.height else None},
        {
            "title": "Valid-citation rate per month",
            "png": citation_figure(
                valid_citation_by_month(lake, sorted({p.parent.parent.name.split("=", 1)[1] for p in lake.partition_files("reader_outputs")}))
            ),
        },
    ]


def planted_utilities(s: Settings) -> pl.DataFrame | None:
    """The embedded world's planted source utilities, when the report's data is that world."""
    from .oracle import planted_table

    f = s.world_dir / "truth" / "source_utility.parquet"
    return planted_table(pl.read_parquet(f)) if s.sources.kind != "files" and f.is_file() else None


def write_report(s: Settings, lake: Lake) -> Path:
    """Tables 1-4 and 6, the experience task's and trees' tables, the figures: the HTML report."""
    ev = lake.read("evaluation") if lake.partition_files("evaluation") else pl.DataFrame(schema={k: v for k, v in LONG_SCHEMA.items() if k != "n"})
    sens = lake.read("sensitivity") if lake.partition_files("sensitivity") else ev.head(0)
    t1 = lake.read("table1_audit") if lake.has_table("table1_audit") else pl.DataFrame()
    test = ev.filter(pl.col("split") == "test")
    tables = [_table1(t1)] if t1.height else []
    memory = memory_note(s.memory.credit, s.memory.families)
    tables += _test_tables(test, memory)
    changes = memory_changes(s, lake, nyse(), "test")
    tables.insert(len(tables) - 1, changes_table((changes[0], changes[2])))  # before Table 4
    tables += explain_tables(s, lake, changes[1])
    for t in tables:  # each memory row of Tables 2 and 4 says what it changed against its twin
        if t["title"].startswith(("Table 2.", "Table 4.")):
            t["note"] = " ".join(
                [t["note"], *[change_sentence(r) + "." for r in family_rows(changes[0]) if r["label"] in {x[0] for x in t["rows"]}]]
            ).strip()
    tables.append(_table6(s, sens))
    tables += task_tables(lake)
    tables += tree_tables(s, lake)
    figures = _figures(lake, t1, planted_utilities(s))
    notes = [
        world_note(s),
        universe_note(s.sources.membership)
        if s.sources.kind == "files"
        else "Universe: the embedded world's companies, each listed over the whole calendar.",
    ] + ([memory] if memory else [])
    return render(lake, report_path(s), s.splits.ranges(), tables, figures, notes)
