"""What each decision day of the loop hands on, checked on the small world of test_pit_loop.py.

Each test pins one thing ``core.loop.step`` passes along and that the point-in-time counts alone do
not see: a resumed range equals one pass, the day's memory parameters and λ, the credit rules and
memory families, the shuffled labels, the reader's day, decoding and principles, the errors, and
the fields of each day's result. Values are computed by hand from the world's rules.
"""

import json

import polars as pl
import pytest

from finrag_dagster.core.events import LEGAL
from finrag_dagster.core.experience.llm import Judgement
from finrag_dagster.core.experience.tree import from_table
from finrag_dagster.core.loop import Past, ToEEnv, Variant, run_days
from finrag_dagster.core.memory.families import FamilyMap
from finrag_dagster.core.memory.feedback import shuffle_labels
from finrag_dagster.core.memory.source_memory import MemoryParams, SourceMemory
from finrag_dagster.core.reader.run import ReaderIncomplete
from tests.unit.test_pit_loop import DAYS, ET, TICKERS, H, RightReader, cal, env_for, prior_tree, states

SM = Variant("source_memory", "source_memory", 0.3)
TOE = Variant("toe", "toe", 0.0, toe=True)


class SpyReader(RightReader):
    """RightReader that records what it was sent and gives every passage a +1 stance when asked."""

    def __init__(self, fail: str | None = None):
        super().__init__()
        self.sent, self.fail = [], fail

    def generate(self, requests):
        out = []
        for r, g in zip(requests, super().generate(requests)):
            self.sent.append(r)
            ans = json.loads(g.text)
            if r.structured.stances:
                ans["stances"] = {i: 1 for i in r.prompt.allowed_ids}
            failed = self.fail is not None and self.fail in r.prompt.user
            out.append(type(g)("", error="boom") if failed else type(g)(json.dumps(ans)))
        return out


def n_of(snapshot: pl.DataFrame, family: str) -> int:
    return int(snapshot.filter(pl.col("source_family") == family)["n"].sum())


def test_a_range_resumed_from_stored_days_equals_one_pass(tmp_path):
    """The scheduled daily run: the memory of the day before and the stored rows of earlier days
    (past_of, past_selections) give the same days as a run from the split start."""
    full = run_days(DAYS, SM, env_for(tmp_path / "a"), None)
    k = 6
    asked = []

    def past_of(d, v):
        asked.append((d, v.name))
        r = full[DAYS.index(d)]
        return Past(r.outputs, r.contexts, {f"{d}_{t}": ET for t in TICKERS})

    env = env_for(tmp_path / "b")
    env.past_of = past_of
    memory = SourceMemory.from_frame(full[k - 1].snapshot)
    resumed = run_days(DAYS[k:], SM, env, memory)
    for r, f in zip(resumed, full[k:]):
        assert r.snapshot.equals(f.snapshot), r.day
        assert r.contexts.equals(f.contexts) and r.outputs.equals(f.outputs)
    # the decision days before the range whose labels matured inside it (D-1-h for 1D, 3D, 5D), each asked for by the variant
    want = {(cal.offset(d, -1 - n).isoformat(), "source_memory") for d in DAYS[k:] for n in H.values() if cal.offset(d, -1 - n).isoformat() < DAYS[k]}
    assert set(asked) == want


def test_a_resumed_toe_range_takes_the_stored_selections_of_days_before_it(tmp_path):
    full = run_days(DAYS, TOE, env_for(tmp_path / "a", ToEEnv(prior=prior_tree, states=states, past_selections=None)), None)
    k = 6
    asked = []

    def past_selections(d, v):
        asked.append((d, v.name))
        return full[DAYS.index(d)].selections

    def past_of(d, v):
        asked.append((d, v.name))
        r = full[DAYS.index(d)]
        return Past(r.outputs, r.contexts, {f"{d}_{t}": ET for t in TICKERS})  # selections not stored with it

    env = env_for(tmp_path / "b", ToEEnv(prior=prior_tree, states=states, past_selections=past_selections))
    env.past_of = past_of
    resumed = run_days(DAYS[k:], TOE, env, None, from_table(full[k - 1].tree))
    for r, f in zip(resumed, full[k:]):
        assert r.toe_updates.equals(f.toe_updates) and r.tree.equals(f.tree), r.day
    assert asked and all(v == "toe" and d < DAYS[k] for d, v in asked)


def test_a_day_without_outputs_holds_back_none_of_the_other_matured_days(tmp_path):
    """A decision day with no anchors has nothing to feed back; the days maturing with it still do."""
    env = env_for(tmp_path)
    empty = DAYS[3]
    day_data = env.day_data

    def no_news_on_empty(d):
        x = day_data(d)
        return type(x)(x.anchors.clear(), x.candidates.clear(), {}) if d == empty else x

    env.day_data = no_news_on_empty
    res = run_days(DAYS, SM, env, None)
    for i, r in enumerate(res[1:], start=1):
        prev = cal.offset(r.day, -1).isoformat()
        want = sum(1 for d0 in DAYS[:i] for n in H.values() if d0 != empty and cal.offset(d0, n).isoformat() <= prev) * len(TICKERS)
        assert n_of(r.snapshot, "news") == want, r.day
    # DAYS[4]: the empty day's 1D label matures with nothing to feed back; 3D of DAYS[1] still counts
    assert n_of(res[5].snapshot, "news") == n_of(res[4].snapshot, "news") + len(TICKERS)


def test_a_one_row_past_day_is_fed_back(tmp_path):
    """A stored day holding a single output row (one anchor, one horizon) still gives its feedback."""
    full = run_days(DAYS, SM, env_for(tmp_path / "a"), None)
    d0 = DAYS[4]
    r0 = full[4]
    one = r0.outputs.filter((pl.col("anchor_id") == f"{d0}_AAA") & (pl.col("horizon") == "1D"))
    assert one.height == 1
    env = env_for(tmp_path / "b")
    env.past_of = lambda d, v: Past(one, r0.contexts, {f"{d0}_AAA": ET}) if d == d0 else None
    memory = SourceMemory.from_frame(full[4].snapshot)
    res = run_days(DAYS[5:7], SM, env, memory)
    # DAYS[6]'s memory is DAYS[5]'s plus what matured on DAYS[5] (1D of DAYS[4], 3D of DAYS[2], 5D of
    # DAYS[0]), of which past_of stores only the one row
    assert n_of(res[1].snapshot, "news") == n_of(res[0].snapshot, "news") + 1


def test_memory_parameters_of_each_day_set_lambda_in_the_final_score(tmp_path):
    """final_score = relevance + lam * memory_adj (seed 000 eq. 6), lam from params_of(day), not the variant's."""
    env = env_for(tmp_path)
    lams = {d: 0.1 * (i % 3 + 1) for i, d in enumerate(DAYS)}
    env.params_of = lambda d: MemoryParams(lam=lams[d])
    res = run_days(DAYS, Variant("source_memory", "source_memory", 0.0), env, None)
    assert any(r.contexts["memory_adj"].abs().max() > 0 for r in res)
    for r in res:
        c = r.contexts
        assert (c["final_score"] - c["relevance"] - lams[r.day] * c["memory_adj"]).abs().max() < 1e-12, r.day


def test_a_variant_without_memory_has_no_snapshot_and_no_adjustment(tmp_path):
    res = run_days(DAYS[:4], Variant("no_memory", "no_memory", 0.0), env_for(tmp_path), None)
    assert all(r.snapshot is None for r in res)
    assert all(r.contexts["memory_adj"].abs().max() == 0 for r in res)


def test_top5_credit_feeds_back_every_family_of_the_context(tmp_path):
    """The reader cites only the news passage: seed 000's cited credit leaves sec_filing unlearned,
    the top-5 ablation credits both families of the context."""
    cited = run_days(DAYS, SM, env_for(tmp_path / "a"), None)[-1].snapshot
    top5 = run_days(DAYS, Variant("top5_all_source", "top5_all_source", 0.3, credit="top5"), env_for(tmp_path / "b"), None)[-1].snapshot
    # top-5 shares each unit among the context's families (seed 000 eq. 5): half to each of the two
    assert n_of(cited, "sec_filing") == 0 and n_of(top5, "sec_filing") == n_of(top5, "news") == n_of(cited, "news") / 2 > 0


def test_passage_stance_credit_asks_for_stances_and_credits_each_passage(tmp_path):
    env = env_for(tmp_path)
    env.credit_rule, env.backend = "passage_stance", SpyReader()
    res = run_days(DAYS, SM, env, None)
    assert env.backend.sent and all(r.structured.stances for r in env.backend.sent)
    snap = res[-1].snapshot
    assert n_of(snap, "sec_filing") == n_of(snap, "news") > 0  # both passages gave a stance, both are credited


def test_a_finer_family_scheme_keys_memory_and_rerank_by_the_family_map(tmp_path):
    env = env_for(tmp_path)
    fm = FamilyMap("fine", {"wire house": "wire"})
    for x in (env.day_data(d) for d in DAYS):
        fm.add(
            (p, f, "Wire House" if f == "news" else None, "10-Q" if f != "news" else None, None, None)
            for p, f in zip(x.candidates["passage_id"], x.candidates["source_family"])
        )
    env.family_of = fm
    res = run_days(DAYS, SM, env, None)
    snap = res[-1].snapshot
    assert set(snap["source_family"]) == set(fm.families)
    assert n_of(snap, "news:wire") == n_of(run_days(DAYS, SM, env_for(tmp_path / "b"), None)[-1].snapshot, "news") > 0
    assert any(r.contexts["memory_adj"].abs().max() > 0 for r in res)


def test_class_weights_are_those_of_the_split(tmp_path):
    env = env_for(tmp_path)
    second = DAYS[3]
    env.split_start = lambda d: DAYS[0] if d < second else second
    env.class_weights = lambda s: {h: {-1: 1.0, 0: 1.0, 1: 1.0 if s == DAYS[0] else 2.0} for h in H}
    res = run_days(DAYS, SM, env, None)
    for r in res:
        snap = r.snapshot
        scale = 1.0 if r.day < second else 2.0
        assert snap["a"].sum() == pytest.approx(scale * n_units(r.day, second)), r.day


def n_units(day: str, second: str) -> int:
    """Units of feedback in the memory of ``day``: (anchor, horizon) pairs of its split matured by day-1."""
    i = DAYS.index(day)
    if i == 0 or day == second:
        return 0
    prev = cal.offset(day, -1).isoformat()
    first = DAYS[0] if day < second else second
    return sum(1 for d0 in DAYS if first <= d0 < day for n in H.values() if cal.offset(d0, n).isoformat() <= prev) * len(TICKERS)


def test_shuffled_labels_feed_back_the_permuted_labels(tmp_path):
    """AAA's anchors are earnings news labelled +1, BBB's legal news labelled -1, and the reader
    answers +1: the memory's earnings cells count right answers (a), its legal cells wrong ones (b).
    The shuffled variant counts by the permuted labels of each (day, horizon)."""
    env = env_for(tmp_path)
    labels_of, day_data = env.labels_of, env.day_data
    env.labels_of = lambda d: labels_of(d).with_columns(pl.when(pl.col("ticker") == "BBB").then(-1).otherwise(1).cast(pl.Int8).alias("y"))

    def legal(d):
        x = day_data(d)
        et = pl.when(pl.col("ticker") == "BBB").then(pl.lit(LEGAL)).otherwise(pl.col("event_type"))
        return type(x)(x.anchors.with_columns(et.alias("event_type")), x.candidates, {})

    env.day_data = legal
    seed = 3
    res = run_days(DAYS, Variant(f"shuffled_labels_s{seed}", "shuffled_labels", 0.3, shuffle_labels_seed=seed), env, None)
    last = res[-1].day
    prev = cal.offset(last, -1).isoformat()
    ab = {ET: [0, 0], LEGAL: [0, 0]}
    for d0 in DAYS:
        for h, n in H.items():
            if d0 < last and cal.offset(d0, n).isoformat() <= prev:
                for t, y in shuffle_labels(env.labels_of(d0), seed).filter(pl.col("horizon") == h).select("ticker", "y").iter_rows():
                    ab[ET if t == "AAA" else LEGAL][0 if y == 1 else 1] += 1
    snap = res[-1].snapshot.filter(pl.col("source_family") == "news")
    got = {c: [snap.filter(pl.col("event_type") == c)[k].sum() for k in ("a", "b")] for c in (ET, LEGAL)}
    assert got == ab
    assert ab[ET][1] > 0  # the permutation moved labels: unshuffled, every earnings answer would be right


def test_the_reader_gets_the_day_its_decoding_and_the_principles(tmp_path):
    env = env_for(tmp_path / "a", ToEEnv(prior=prior_tree, states=states, past_selections=None))
    env.backend, env.decoding = SpyReader(), {"temperature": 0.0, "max_tokens": 50}
    res = run_days(DAYS[:2], TOE, env, None)
    sent = env.backend.sent
    assert [r.structured.prediction_day for r in sent] == [d for d in DAYS[:2] for _ in TICKERS]
    assert all("the company beats estimates" in r.prompt.user and r.structured.principle_weights for r in sent)
    assert not any(r.structured.stances for r in sent)
    other = env_for(tmp_path / "b", ToEEnv(prior=prior_tree, states=states, past_selections=None))
    other.decoding = {"temperature": 0.0, "max_tokens": 60}
    res2 = run_days(DAYS[:2], TOE, other, None)
    assert set(res[0].outputs["prompt_hash"]).isdisjoint(res2[0].outputs["prompt_hash"])  # decoding is part of each answer's key


def test_a_toe_day_passes_the_judge_the_embedder_the_cap_and_the_days_cache(tmp_path):
    calls = []

    def judge(items, cache):
        calls.append(cache)
        return [Judgement("expand", "", "new principle from the judge", True, "{}") for _ in items]

    def embed(texts):
        calls.append(tuple(texts))
        return [states(DAYS[0])[3][0] for _ in texts]

    def run(cap):
        toe = ToEEnv(prior=prior_tree, states=states, past_selections=None, expansion_cap=cap, judge=judge, embed_fn=embed)
        return run_days(DAYS[:1], TOE, env_for(tmp_path / str(cap), toe), None)[0]

    full, room = run(1), run(5)
    assert set(full.selections["outcome"]) == {"factor_full"}  # the factor holds one leaf: cap 1 leaves no room
    assert set(room.selections["outcome"]) == {"expanded"}
    assert "new principle from the judge" in set(room.tree["principle"].to_pylist())
    assert ("new principle from the judge",) * len(TICKERS) in calls and any(c is not None and not isinstance(c, tuple) for c in calls)


def test_a_day_with_an_unanswered_anchor_raises_with_the_day_and_its_stats(tmp_path):
    env = env_for(tmp_path)
    env.backend = SpyReader(fail="BBB beats")
    with pytest.raises(ReaderIncomplete) as e:
        run_days(DAYS[:2], SM, env, None)
    assert e.value.day == DAYS[0] and list(e.value.stats.failed_anchors) == [f"{DAYS[0]}_BBB"] and e.value.stats.anchors == 2


def test_each_step_result_carries_its_rows(tmp_path):
    asked = []
    prior = lambda d: asked.append(d) or prior_tree(d)  # noqa: E731
    r = run_days(DAYS[:1], TOE, env_for(tmp_path, ToEEnv(prior=prior, states=states, past_selections=None)), None)[0]
    assert asked == [DAYS[0]]  # the prior tree of the split's first day
    assert r.contexts.height == 2 * len(TICKERS) and r.outputs.height == len(TICKERS) * len(H)
    assert r.stats.anchors == len(TICKERS) and r.selections.height == len(TICKERS) and r.tree.num_rows >= 1


@pytest.mark.parametrize(
    ("variant", "tree", "toe", "match"),
    [
        (SM, None, None, "no memory snapshot for the day before"),
        (TOE, None, None, "a toe variant needs LoopEnv.toe"),
        (TOE, None, "toe", "no experience tree for the day before"),
        (TOE, None, "no_prior", "no prior experience tree on"),
    ],
)
def test_a_day_that_cannot_be_computed_says_why(tmp_path, variant, tree, toe, match):
    envs = {
        None: None,
        "toe": ToEEnv(prior=prior_tree, states=states, past_selections=None),
        "no_prior": ToEEnv(prior=lambda d: None, states=states, past_selections=None),
    }
    day = DAYS[0] if toe == "no_prior" else DAYS[1]
    with pytest.raises(ValueError, match=match):
        run_days([day], variant, env_for(tmp_path, envs[toe]), None, tree)
