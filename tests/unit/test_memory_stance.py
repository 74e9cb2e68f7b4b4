"""The passage-stance credit (``memory.credit = "passage_stance"``, an extension beyond seed 000's
App. C; docs/method.md §4 "Credit by passage stance") and its promise to leave the paper's default
untouched: same prompts, schemas, answers and feedback columns as before the extension."""

import datetime as dt
import hashlib
import json

import polars as pl
import pyarrow.parquet as pq
import pytest

from finrag_dagster.core.memory.feedback import FEEDBACK_COLUMNS, STANCE_COLUMNS, CreditRule, build_feedback, context_stances, stance_credit
from finrag_dagster.core.memory.source_memory import MemoryParams, SourceMemory
from finrag_dagster.core.reader.embedded import ReaderInput, passage_stances, read, read_evidence
from finrag_dagster.core.reader.parse import parse_output
from finrag_dagster.core.reader.prompt import AnchorInfo, EvidenceItem, build_prompt, prompt_ids
from finrag_dagster.core.settings import Settings
from finrag_dagster.core.tables import Lake

E = "Earnings & Guidance"
ANCHOR = AnchorInfo(
    "a1", "AAPL", "Apple Inc.", "Apple beats estimates and raises guidance", "Revenue grew on strong iPhone demand.", "2020-05-01", E, "after_close"
)
EVIDENCE = [
    EvidenceItem("p1", "news", "Apple iPhone demand strong", "Analysts see iPhone demand growth and record revenue.", "2020-04-30T12:00:00+00:00"),
    EvidenceItem(
        "p2", "sec_filing", "Apple 8-K", "Apple reported revenue; results declined in services.", "2020-04-29T20:00:00+00:00", "8-K", "2.02"
    ),
    EvidenceItem("p3", "news", "Unrelated lawsuit", "A court dismissed a patent lawsuit against a supplier.", "2020-04-28T12:00:00+00:00"),
]


def _inp(p, stances=False):
    a = ANCHOR
    return ReaderInput(a.headline, a.summary, a.event_type, tuple(zip(p.allowed_ids, EVIDENCE)), "normal", a.prediction_day, (), a.company, stances)


def _h(t: str) -> str:
    return hashlib.sha256(t.encode()).hexdigest()[:16]


def test_the_default_prompt_schema_and_answers_are_the_texts_of_before_the_extension():
    # pinned from the tree before the extension (commit 6069a75): the paper's settings send the same
    # prompt (so the same prompt-cache key) and the embedded readers write the same answer
    p = build_prompt(ANCHOR, EVIDENCE, "as_of: 2020-05-01 close")
    assert _h(p.user) == "9441adc233407cad"
    assert _h(json.dumps(p.schema, sort_keys=True)) == "b567ed1f941dec13"
    assert p.key("embedded", "m", {"temperature": 0.0})[:16] == "1246364e7bee031a"
    assert _h(read(_inp(p))) == "78647a95c8ba6bcd" and _h(read_evidence(_inp(p))) == "596a2f49e22c26d1"
    assert Settings().memory.credit == "cited_correct"


def test_the_stance_prompt_asks_for_stances_and_the_readers_answer_them_without_changing_the_signals():
    base = build_prompt(ANCHOR, EVIDENCE, "card")
    p = build_prompt(ANCHOR, EVIDENCE, "card", stances=True)
    assert "stances" not in base.user and "stances" not in base.schema["properties"]
    assert '"stances"' in p.user and "stances" in p.schema["required"]
    assert sorted(p.schema["properties"]["stances"]["properties"]) == ["F1", "N1", "N2"]
    assert p.key("embedded", "m", {}) != base.key("embedded", "m", {})  # never a cached default answer
    for reader in (read, read_evidence):
        plain, with_st = json.loads(reader(_inp(base))), json.loads(reader(_inp(p, stances=True)))
        assert with_st.pop("stances") == passage_stances(_inp(p, stances=True))
        assert with_st == plain  # the answer itself is the same
    # N1 is on topic and positive, F1 on topic and negative ("declined"); N2 (another event) gets none
    assert passage_stances(_inp(p, stances=True)) == {"N1": 1, "F1": -1}


def test_parse_keeps_retrieved_ids_with_in_range_stances_only():
    raw = json.dumps({"event_type": E, "signals": {}, "main_uncertainty": "", "stances": {"N1": 1, "F1": "-1", "N9": 1, "N2": 2, "F2": True}})
    assert parse_output(raw, ["N1", "N2", "F1", "F2"]).stances == {"N1": 1, "F1": -1}
    assert parse_output(json.dumps({"signals": {}, "stances": [1, 0]}), ["N1"]).stances == {}
    assert parse_output("not json", ["N1"]).stances == {}


def test_context_stances_rebuild_the_prompt_ids_from_the_context_order():
    ctx = [("p1", "news"), ("p2", "sec_filing"), ("p3", "news"), ("p4", "sec_filing")]
    assert prompt_ids([f for _, f in ctx]) == ["N1", "F1", "N2", "F2"]
    raw = json.dumps({"stances": {"F2": 0, "N1": -1, "N2": 1}})
    assert context_stances(raw, ctx) == [("p1", "news", -1), ("p3", "news", 1), ("p4", "sec_filing", 0)]


def test_stance_credit_counts_all_three_values():
    st = [("p1", "news", 1), ("p2", "sec_filing", 0), ("p3", "news", -1)]
    assert stance_credit(st, 1) == (["news"], ["sec_filing", "news"])
    assert stance_credit(st, 0) == (["sec_filing"], ["news", "news"])  # a neutral stance is right on a neutral label
    assert stance_credit(st, -1) == (["news"], ["news", "sec_filing"])


def _day():
    ctx = pl.DataFrame(
        {
            "anchor_id": ["a1", "a1", "a1", "a2", "a2", "a3"],
            "passage_id": ["p1", "p2", "p3", "q1", "q2", "r1"],
            "source_family": ["news", "sec_filing", "news", "news", "sec_filing", "news"],
            "position": [1, 2, 3, 1, 2, 1],
        }
    )
    ans = lambda st: json.dumps({"event_type": E, "signals": {}, "main_uncertainty": "", "stances": st})  # noqa: E731
    raws = {"a1": ans({"N1": 1, "F1": -1, "N2": 1}), "a2": ans({"F1": -1}), "a3": ans({})}
    out = pl.DataFrame(
        {
            "anchor_id": ["a1", "a2", "a3", "a4"],
            "ticker": ["T1", "T2", "T3", "T4"],
            "event_type": [E] * 4,
            "horizon": ["1D"] * 4,
            # a1's answer is wrong (-1 against +1) and cites its filing; a2 right; a3 cites nothing
            "signal": [-1, 1, 1, 1],
            "cited_families": [["sec_filing"], ["news"], [], ["news"]],
            "raw_json": [raws["a1"], raws["a2"], raws["a3"], ans({"N1": 1})],
        },
        schema_overrides={"signal": pl.Int8},
    )
    lab = pl.DataFrame(
        {
            "ticker": ["T1", "T2", "T3", "T4"],
            "horizon": ["1D"] * 4,
            "maturity_day": [dt.date(2020, 5, 4)] * 4,
            "status": ["ok", "ok", "ok", "insufficient_history"],
            "y": [1, 1, 1, None],
            "z": [1.5, 1.5, 1.5, None],
        },
        schema_overrides={"y": pl.Int8},
    )
    return out, lab, ctx


def test_passage_stance_feedback_credits_each_passage_whatever_the_answer():
    out, lab, ctx = _day()
    w = {"1D": {1: 2.0, 0: 0.5, -1: 2.0}}
    keys = {a: E for a in ("a1", "a2", "a3", "a4")}
    fb = build_feedback(out, lab, ctx, dt.date(2020, 5, 4), w, keys, CreditRule("cited", "passage_stance")).sort("anchor_id")
    assert fb.columns == FEEDBACK_COLUMNS + STANCE_COLUMNS
    r = {x["anchor_id"]: x for x in fb.iter_rows(named=True)}
    # a1: the answer was wrong, but its two news passages said +1 (right) and its filing -1 (wrong)
    assert r["a1"]["correct"] is False and r["a1"]["outcome"] == "applied"
    assert r["a1"]["stance_passages"] == ["p1", "p2", "p3"] and r["a1"]["stances"] == [1, -1, 1]
    assert r["a1"]["families_right"] == ["news", "news"] and r["a1"]["families_wrong"] == ["sec_filing"]
    assert r["a1"]["families"] == ["news", "sec_filing"] and r["a1"]["weight"] == 2.0
    # a2: the answer was right, its filing's stance wrong: the filing is debited, the news it cited is not credited
    assert r["a2"]["correct"] is True and r["a2"]["families_right"] == [] and r["a2"]["families_wrong"] == ["sec_filing"]
    assert r["a3"]["outcome"] == "no_stance" and not r["a3"]["applied"]
    assert r["a4"]["outcome"] == "label_unavailable" and r["a4"]["families_right"] == r["a4"]["families_wrong"] == [] and r["a4"]["weight"] == 0.0

    m = SourceMemory(MemoryParams())
    assert m.apply(fb) == 3  # a1: news right, filing wrong; a2: filing wrong
    assert m.cell("news", E, "1D") == (pytest.approx(2.0 * 2 / 3), 0.0)
    assert m.cell("sec_filing", E, "1D") == (0.0, pytest.approx(2.0 / 3 + 2.0))

    # seed 000's rule on the same day: the answer's correctness to the cited families
    old = build_feedback(out, lab, ctx, dt.date(2020, 5, 4), w, keys, CreditRule("cited"))
    assert old.columns == FEEDBACK_COLUMNS
    m0 = SourceMemory(MemoryParams())
    m0.apply(old)
    assert m0.cell("sec_filing", E, "1D") == (0.0, 2.0) and m0.cell("news", E, "1D") == (2.0, 0.0)


def test_the_default_feedback_files_have_the_columns_of_before_and_stance_files_add_the_lineage(tmp_path):
    out, lab, ctx = _day()
    keys = {a: E for a in ("a1", "a2", "a3", "a4")}
    lake = Lake(tmp_path)
    for rule, variant in (("cited_correct", "v0"), ("passage_stance", "v1")):
        fb = build_feedback(out, lab, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule("cited", rule))
        path, n = lake.write("feedback", fb, variant=variant, date="2020-05-01")
        assert n == 4
        names = pq.read_schema(path).names
        assert names == (FEEDBACK_COLUMNS if rule == "cited_correct" else FEEDBACK_COLUMNS + STANCE_COLUMNS)
    # no row matured: the empty frames follow the rule too
    early = build_feedback(out, lab, ctx, dt.date(2020, 5, 1), {}, keys, CreditRule("cited"))
    assert early.height == 0 and early.columns == FEEDBACK_COLUMNS
    none = build_feedback(out.clear(), lab, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule("cited", "passage_stance"))
    assert none.height == 0 and none.columns == FEEDBACK_COLUMNS + STANCE_COLUMNS  # no answer that day
    with pytest.raises(ValueError, match="memory.credit"):
        build_feedback(out, lab, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule("cited", "stance"))
