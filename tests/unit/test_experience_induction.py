"""Tree-of-Experience induction (seed 002 eqs 3-5), the lake round trip (daily state, content written
once), the markdown view and the LLM-rewrite update (eq. 14), against hand-computed cases and a
fake backend."""

import datetime as dt
import random

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.experience.induction import (
    FACTORS,
    InductionParams,
    assign_factor,
    default_factors,
    factor_text,
    induce_tree,
    skeleton,
    threshold_clusters,
)
from finrag_dagster.core.experience.llm import (
    LLMBackendRequired,
    llm_rewriter,
    llm_update,
    llm_update_prompt,
    llm_updates,
    parse_utility,
    quarantine_rows,
)
from finrag_dagster.core.experience.store import known_before, read_rows, write_rows
from finrag_dagster.core.experience.tree import ExperienceTree, Factor, Leaf, from_table, render_markdown, rows_schema, to_table
from finrag_dagster.core.reader.backends import Backend, BackendConfig, EmbeddedBackend, Generation
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.storage.lake import file_digest
from finrag_dagster.core.storage.schemas import EXPERIENCE_LEAVES
from finrag_dagster.core.tables import Lake


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


# skeleton -> vector, chosen so the clusters can be computed by hand
VEC = {
    "the company beats QN estimates": unit([1, 0, 0]),
    "the company tops QN estimates": unit([0.9, 0.43589, 0]),  # cos 0.9 with "beats"
    "the company cuts guidance": unit([0, 0, 1]),
    "the company cuts its outlook": unit([0, 0.52678, 0.85]),  # cos 0.85 with "cuts guidance", 0.23 with "tops"
    "the company faces lawsuit": unit([0.5, 0.5, 0.5]),
}
CALLS = []


def fake_embed(texts):
    CALLS.append(list(texts))
    return np.stack([VEC[t] for t in texts])


ANCHORS = pl.DataFrame(
    {
        "anchor_id": ["a1", "a2", "a3", "a4", "a5", "a6", "a7"],
        "ticker": ["AAPL", "MSFT", "AAPL", "AAPL", "MSFT", "NVDA", "AAPL"],
        "event_type": ["Earnings & Guidance"] * 5 + ["Legal & Regulatory", "Other/Mixed"],
        "headline": [
            "Apple beats Q3 estimates",
            "Microsoft (MSFT) beats Q2 estimates",
            "Apple tops Q4 estimates",
            "Apple cuts guidance",
            "Microsoft cuts its outlook",
            "Nvidia faces lawsuit",
            "A quiet day at the office",
        ],
        "summary": [""] * 7,
    }
)
NAMES = {"AAPL": ["Apple Inc."], "MSFT": ["Microsoft Corp"], "NVDA": ["Nvidia"]}  # short names masked by first word


def induced():
    return induce_tree(ANCHORS, fake_embed, names=NAMES, induction=InductionParams(cluster_threshold=0.8, min_support=2))


def test_rule_skeleton_and_factor_assignment():
    assert (
        skeleton("Microsoft (MSFT) beats Q2 estimates, revenue $7.1B up 12%", ["Microsoft"], ["MSFT"])
        == "the company beats QN estimates, revenue N up N"
    )
    assert skeleton("UPDATE 2-Meta Platforms' deal", ["Meta Platforms"]) == "the company' deal"
    # tickers only as written, a one-letter ticker only in parentheses
    assert skeleton("A unit of ON (A) raises outlook on chips", [], ["A", "ON"]) == "A unit of the company raises outlook on chips"
    fac = default_factors()
    assert [f.name for f in fac] == [n for n, _ in FACTORS] and len(fac) == 8 and all(not f.leaves for f in fac)
    assert fac[assign_factor(factor_text("Earnings & Guidance", "Apple cuts guidance"), fac)].name == "Earnings and guidance"
    assert fac[assign_factor(factor_text("Other/Mixed", "Fed signals rate cut as inflation cools"), fac)].name == "Macroeconomy and rates"
    assert assign_factor(factor_text("Other/Mixed", "A quiet day at the office"), fac) is None


def test_threshold_clusters_by_hand():
    v = np.stack([unit([1, 0]), unit([0.9, 0.43589]), unit([0, 1])])
    # scores: 0 -> 2+1, 1 -> 1+2, 2 -> 5 (alone, heavier): the heavy item leads first
    assert threshold_clusters(v, [2, 1, 5], 0.8) == [(2, [2], 5.0), (0, [0, 1], 3.0)]
    assert threshold_clusters(np.zeros((0, 2)), [], 0.8) == []


def test_induction_by_hand():
    CALLS.clear()
    tree, rep = induced()
    # one embedding call over the distinct skeletons of assigned anchors, in sorted order
    assert CALLS == [sorted(VEC)]
    earn = tree.factors[0]
    # Earnings: skeletons (weights) beats(2) tops(1) cuts guidance(1) cuts its outlook(1)
    # neighbour weights at cos >= 0.8: beats 3, tops 3 -> tie, "beats" sorts first and leads {beats, tops};
    # then cuts guidance 2, cuts its outlook 2 -> "cuts guidance" leads both.
    assert [(x.leaf_id, x.principle, x.support) for x in earn.leaves] == [
        ("L00000", "the company beats QN estimates", 3),
        ("L00001", "the company cuts guidance", 2),
    ]
    assert np.array_equal(earn.leaves[0].embedding, VEC["the company beats QN estimates"])
    assert all(x.q == {"1D": 1.0, "3D": 1.0, "5D": 1.0} and x.n_recall == x.n_hit == 0 for x in tree.leaves())
    # the lawsuit cluster has one anchor < min_support: the factor stays, leafless
    assert tree.factors[1].name == "Legal and regulatory" and tree.factors[1].leaves == []
    assert (rep.anchors, rep.unassigned, rep.clusters, rep.clusters_too_small, rep.leaves) == (7, 1, 3, 1, 2)
    assert rep.per_factor["Earnings and guidance"] == 5 and rep.per_factor["Legal and regulatory"] == 1
    # the induced tree selects as eqs 6-11 say: a new earnings beat recalls L00000
    sel = tree.select("Earnings & Guidance. Apple beats estimates", VEC["the company tops QN estimates"], "1D")
    assert sel.leaf.leaf_id == "L00000" and not sel.expand
    assert tree.expand(tree.factors[1], "p", unit([1, 1, 0])).leaf_id == "L00002"  # expansion continues the ids


def test_induction_ignores_row_order_and_caps_leaves():
    rows = ANCHORS.rows()
    random.Random(3).shuffle(rows)
    shuffled = pl.DataFrame(rows, schema=ANCHORS.schema, orient="row")
    t1, t2 = to_table(induced()[0]), to_table(induce_tree(shuffled, fake_embed, names=NAMES)[0])
    assert t1.equals(t2)
    capped, rep = induce_tree(ANCHORS, fake_embed, names=NAMES, induction=InductionParams(min_support=1, max_leaves_per_factor=1))
    assert [x.principle for x in capped.factors[0].leaves] == ["the company beats QN estimates"] and rep.clusters_over_cap == 1
    assert [x.principle for x in capped.factors[1].leaves] == ["the company faces lawsuit"]
    empty, rep = induce_tree(ANCHORS.head(0), fake_embed)
    assert len(empty.factors) == 8 and empty.leaves() == [] and rep.anchors == 0


def test_table_round_trip_is_exact(tmp_path):
    tree, _ = induced()
    leaf = tree.factors[0].leaves[1]
    tree.update(leaf.leaf_id, "3D", 0.0123)  # a non-trivial float
    leaf.n_recall = 4
    tree.expand(tree.factors[2], "buyback signals confidence", unit([0.1, 0.2, 0.3]))
    t = to_table(tree)
    assert t.schema.equals(rows_schema())
    assert t.num_rows == 3 + 6  # three leaves, six leafless factors
    back = from_table(t, tree.params)
    assert [f.name for f in back.factors] == [f.name for f in tree.factors]
    assert [f.keywords for f in back.factors] == [f.keywords for f in tree.factors]
    for a, b in zip(tree.leaves(), back.leaves()):
        assert (a.leaf_id, a.factor, a.principle, a.q, a.n_recall, a.n_hit, a.support) == (
            b.leaf_id,
            b.factor,
            b.principle,
            b.q,
            b.n_recall,
            b.n_hit,
            b.support,
        )
        assert a.embedding.dtype == b.embedding.dtype == np.float32 and np.array_equal(a.embedding, b.embedding)
    assert back.leaves()[1].q["3D"] == leaf.q["3D"] != 1.0
    # through the lake: same tree -> same bytes, and the re-read tree writes the same bytes again;
    # its content is written once, on the first day
    lake = Lake(tmp_path)
    known = known_before(lake, "prior", "2019-04-30")
    known, n1 = write_rows(lake, "prior", "2019-04-30", t, known)
    known, n2 = write_rows(lake, "prior", "2019-05-01", to_table(tree), known)
    again = from_table(read_rows(lake, "prior", "2019-04-30"), tree.params)
    known, n3 = write_rows(lake, "prior", "2019-05-02", to_table(again), known)
    days = ["2019-04-30", "2019-05-01", "2019-05-02"]
    assert len({file_digest(lake.path("experience_tree", tree_id="prior", date=d)) for d in days}) == 1
    assert (n1, n2, n3) == (9, 0, 0) and lake.materialized_dates("experience_leaves", tree_id="prior") == days[:1]
    assert EXPERIENCE_LEAVES.schema.equals(pq.read_schema(lake.path("experience_leaves", tree_id="prior", date=days[0])).remove_metadata())
    assert to_table(again).equals(t) and read_rows(lake, "prior", days[2]).equals(t)
    # the next expansion after a reload keeps numbering where it was
    assert again.expand(again.factors[3], "x", unit([1, 0, 0])).leaf_id == "L00003"
    with pytest.raises(ValueError, match="horizons"):
        from_table(t, type(tree.params)(horizons=("1D", "5D", "10D", "20D")))


def test_empty_tree_round_trips_to_no_rows():
    t = to_table(ExperienceTree([]))
    assert t.num_rows == 0 and from_table(t).factors == []


def test_markdown_shows_factors_principles_q_and_counts():
    tree, _ = induced()
    tree.factors[0].leaves[0].n_recall, tree.factors[0].leaves[0].n_hit = 7, 2
    md = render_markdown(tree, "experience tree on 2019-04-30")
    assert "experience tree on 2019-04-30" in md
    assert "| factor | analysis direction | Q (1D, 3D, 5D) | recall/hit | support | id |" in md
    assert "**Earnings and guidance**" in md and "the company beats QN estimates" in md and "the company cuts guidance" in md
    assert "[1.0000, 1.0000, 1.0000] | 7/2 | 3 | `L00000`" in md
    assert "**Legal and regulatory** | _no principle yet_" in md
    assert "no tree" in render_markdown(ExperienceTree([]))
    assert render_markdown(tree, max_leaves=1).count("_… 1 more_") == 1
    assert tree.to_markdown() == render_markdown(tree)


# ------------------------------------------------------------------ eq. 14 through a backend
class FakeBackend(Backend):
    """Any LLM backend: answers scripted texts, records the prompts."""

    name = "fake"

    def __init__(self, answers):
        super().__init__(BackendConfig(backend="fake", model="fake-1"))
        self.answers = list(answers)
        self.prompts = []

    def generate(self, requests):
        out = []
        for r in requests:
            self.prompts.append(r.prompt)
            a = self.answers.pop(0)
            out.append(Generation("", error=a[1]) if isinstance(a, tuple) else Generation(a))
        return out


def _tree():
    return ExperienceTree(
        [Factor("supply", ("chip",), [Leaf("L1", "supply", "shortages lift prices", unit([1, 0]), {"1D": 1.0, "3D": 1.2, "5D": 1.0})])]
    )


def test_llm_update_parses_and_clips():
    tree = _tree()
    be = FakeBackend(['{"q": 1.35}'])
    u = llm_update(tree, be, "L1", "3D", 0.6, -0.02)
    assert u.ok and u.q_old == 1.2 and u.q_new == 1.35 and not u.clipped
    leaf = tree.leaves()[0]
    assert leaf.q == {"1D": 1.0, "3D": 1.35, "5D": 1.0} and leaf.n_hit == 1
    p = be.prompts[0]
    assert "shortages lift prices" in p.user and "Matured horizon: 3D" in p.user and "-0.020000" in p.user
    assert "3D: 1.2000" in p.user and p.schema["required"] == ["q"]
    be = FakeBackend(['```json\n{"q": 3.5}\n```', "-0.2", '{"q": "0.75"}'])
    us = llm_updates(be, [(leaf, "1D", 1.0, 0.01), (leaf, "5D", -1.0, 0.01), (leaf, "3D", 0.0, 0.0)])
    assert [(x.ok, x.q_new, x.clipped) for x in us] == [(True, 2.0, True), (True, 0.0, True), (True, 0.75, False)]
    assert leaf.q["1D"] == 1.0  # llm_updates alone changes nothing


def test_llm_update_unparsable_keeps_q_and_is_quarantined():
    tree = _tree()
    be = FakeBackend(["I would raise it a bit", '{"q": NaN}', ("", "HTTP 500: boom"), '{"utility": 1.1}'])
    leaf = tree.leaves()[0]
    us = llm_updates(be, [(leaf, h, 0.5, 0.01) for h in ("1D", "3D", "5D", "1D")])
    assert not any(u.ok for u in us) and all(u.q_new == u.q_old for u in us)
    assert "unparsable" in us[0].error and "backend error: HTTP 500" in us[2].error and "'q'" in us[3].error
    q = quarantine_rows(us)
    assert (
        q.height == 4
        and q["source_row"].to_list() == [0, 1, 2, 3]
        and q.columns == ["source_file", "source_row", "reason", "raw", "rows"]
        and q["rows"].to_list() == [1] * 4
    )
    u = llm_update(tree, FakeBackend(["no idea"]), "L1", "1D", 0.5, 0.01)
    assert not u.ok and leaf.q["1D"] == 1.0 and leaf.n_hit == 0
    assert parse_utility("1.5") == (1.5, "") and parse_utility("between 1 and 2")[0] is None and parse_utility("")[0] is None


def test_llm_paths_need_an_llm_backend():
    tree = _tree()
    emb = EmbeddedBackend(BackendConfig())
    with pytest.raises(LLMBackendRequired, match="llama_cpp .* openai .* vllm") as e:
        llm_update(tree, emb, "L1", "1D", 0.5, 0.01)
    assert "eq. 14" in str(e.value) and "embedded" in str(e.value)
    with pytest.raises(LLMBackendRequired, match="eq. 3"):
        llm_rewriter(emb)
    assert tree.leaves()[0].q["1D"] == 1.0
    assert "Factor: supply" in llm_update_prompt(tree.leaves()[0], "1D", 0.5, 0.01).user


def test_llm_rewrite_induction_with_fallback():
    answers = {
        "the company beats QN estimates": '{"principle": "Upside earnings surprises lift the stock"}',
        "the company tops QN estimates": '{"principle": "Upside earnings surprises lift the stock"}',
        "the company cuts guidance": '{"principle": "Guidance cuts reset expectations lower"}',
        "the company cuts its outlook": "not json",
        "the company faces lawsuit": '{"principle": "Litigation adds legal overhang"}',
        "A quiet day at the office": '{"principle": "Nothing"}',
    }

    class ByPrompt(FakeBackend):
        def generate(self, requests):
            return [Generation(answers[r.prompt.user.split("\n")[0].removeprefix("Headline: ")]) for r in requests]

    VEC["Upside earnings surprises lift the stock"] = unit([1, 0, 0])
    VEC["Guidance cuts reset expectations lower"] = unit([0, 0, 1])
    VEC["Litigation adds legal overhang"] = unit([0, 1, 0])
    tree, rep = induce_tree(ANCHORS, fake_embed, names=NAMES, rewrite=llm_rewriter(ByPrompt([])))
    assert rep.rewrite == "llm" and rep.rewrite_fallbacks == 1
    # the unparsable rewrite fell back to the rule skeleton, which clusters with "Guidance cuts" (cos 0.85)
    assert [(x.principle, x.support) for x in tree.factors[0].leaves] == [
        ("Upside earnings surprises lift the stock", 3),
        ("Guidance cuts reset expectations lower", 2),
    ]


def test_induction_day_is_the_train_split_end():
    from finrag_dagster.core.splits import induction_day, train_days_before

    s = Settings(
        splits={
            "train": (dt.date(2019, 1, 1), dt.date(2019, 4, 30)),
            "validation": (dt.date(2019, 5, 1), dt.date(2019, 8, 31)),
            "test": (dt.date(2019, 9, 1), dt.date(2019, 12, 31)),
        }
    )
    cal = nyse()
    assert induction_day(s, cal) == "2019-04-30"
    days = train_days_before(s, cal, "2019-04-30")
    assert days[0] == "2019-01-02" and days[-1] == "2019-04-29"  # the induction day's own anchors are not used
    assert train_days_before(s, cal, "2019-01-02") == []
