"""Finer source families (``memory.families = "fine"``, an extension beyond seed 000's two families;
docs/method.md §4 "Finer source families"): the passage -> family mapping, its editable publisher
file, separate memory cells per fine family, and the paper's default left as it was."""

import datetime as dt
import json

import polars as pl
import pytest

from finrag_dagster.core.memory.families import (
    FINE,
    SEED000,
    FamilyMap,
    PublisherClassesError,
    load_publisher_classes,
    memory_family,
    parse_publisher_classes,
)
from finrag_dagster.core.memory.feedback import CreditRule, build_feedback
from finrag_dagster.core.memory.source_memory import FAMILIES, MemoryParams, SourceMemory, rerank
from finrag_dagster.core.settings import Settings, load_settings
from finrag_dagster.sources.synthetic.text import PUBLISHERS

E = "Earnings & Guidance"
CLASSES = {"reuters": "wire", "motley fool": "opinion", "nasdaq": "aggregator"}


def test_seed000_is_the_source_family_and_fine_splits_news_by_publisher_and_filings_by_form_and_item():
    for fam in ("news", "sec_filing"):
        assert memory_family("seed000", fam, "Reuters", "8-K", "Item 2.02", CLASSES) == fam
    fine = lambda *a, **k: memory_family("fine", *a, classes=CLASSES, **k)  # noqa: E731
    assert fine("news", " REUTERS ") == "news:wire"  # trimmed, any case
    assert fine("news", "Motley Fool") == "news:opinion" and fine("news", "Nasdaq") == "news:aggregator"
    assert fine("news", "Some Blog") == "news:other" and fine("news", None) == "news:other"
    assert fine("sec_filing", None, "8-K", "Item 2.02") == "sec:8-K-2.02"
    assert fine("sec_filing", None, "8-K/A", "Item 5.02") == "sec:8-K-other"
    # a filing known from its index only: one descriptive passage without item, its text names the items
    assert fine("sec_filing", None, "8-K", None, text="Apple Inc. Form 8-K, Item 2.02 Results of Operations") == "sec:8-K-2.02"
    assert fine("sec_filing", None, "8-K", None, text="Apple Inc. Form 8-K, Item 8.01 Other Events") == "sec:8-K-other"
    # with the filing's items known, every passage of an earnings 8-K counts as one (its press release too)
    for item in ("Cover", "Item 2.02", "Item 9.01", "Exhibit 99.1"):
        assert fine("sec_filing", None, "8-K", item, filing_items="2.02, 9.01") == "sec:8-K-2.02"
        assert fine("sec_filing", None, "8-K", item, filing_items="8.01,9.01") == "sec:8-K-other"
    assert fine("sec_filing", None, "10-Q", "Part II Item 1A") == "sec:10-Q"
    assert fine("sec_filing", None, "10-K/A", "Item 7") == "sec:10-K"
    assert fine("sec_filing", None, "S-1", None) == "sec:other"
    with pytest.raises(ValueError, match="memory.families"):
        memory_family("coarse", "news")


def test_the_shipped_mapping_file_classes_every_publisher_of_the_embedded_world():
    c = load_publisher_classes()
    assert {v for v in c.values()} == {"wire", "opinion", "aggregator"}
    assert all(name.lower() in c for name, _ in PUBLISHERS)


def test_a_bad_mapping_file_names_the_file_and_line(tmp_path):
    ok = "# my classes\npublisher,class\nReuters,wire\n\nSeeking Alpha , Opinion\n"
    assert parse_publisher_classes(ok, "x.csv") == {"reuters": "wire", "seeking alpha": "opinion"}
    with pytest.raises(PublisherClassesError, match=r"x\.csv:3: unknown class 'tabloid' for 'Daily Star'"):
        parse_publisher_classes("publisher,class\nReuters,wire\nDaily Star,tabloid\n", "x.csv")
    with pytest.raises(PublisherClassesError, match=r"x\.csv:4: publisher 'reuters' is already mapped on line 2"):
        parse_publisher_classes('publisher,class\nReuters,wire\nNasdaq,aggregator\n"reuters ",opinion\n', "x.csv")
    with pytest.raises(PublisherClassesError, match=r"x\.csv:1: expected the header"):
        parse_publisher_classes("Reuters,wire\n", "x.csv")
    with pytest.raises(PublisherClassesError, match=r"x\.csv:2: expected 'publisher,class'"):
        parse_publisher_classes("publisher,class\nReuters\n", "x.csv")
    p = tmp_path / "mine.csv"
    p.write_text("publisher,class\nReuters,wire\nReuters,wire\n")
    with pytest.raises(PublisherClassesError, match=f"{p}:3"):
        load_publisher_classes(p)
    with pytest.raises(PublisherClassesError, match="not a file"):
        load_publisher_classes(tmp_path / "missing.csv")


def test_settings_default_to_seed000_and_a_relative_mapping_file_is_read_from_the_settings_folder(tmp_path):
    assert Settings().memory.families == "seed000" and Settings().memory.publisher_classes is None
    (tmp_path / "s.toml").write_text('[memory]\nfamilies = "fine"\npublisher_classes = "pubs.csv"\n')
    s = load_settings(tmp_path / "s.toml")
    assert s.memory.families == "fine" and s.memory.publisher_classes == tmp_path / "pubs.csv"


def _fmap() -> FamilyMap:
    fm = FamilyMap("fine", CLASSES)
    fm.add(
        [
            ("n_wire", "news", "Reuters", None, None, None),
            ("n_op", "news", "Motley Fool", None, None, None),
            ("n_unk", "news", "Some Blog", None, None, None),
            ("f_202", "sec_filing", None, "8-K", "Item 2.02", None),
            ("f_10q", "sec_filing", None, "10-Q", "Item 2", None),
        ]
    )
    return fm


def _day():
    """Three anchors' answers (all +1 on 1D, label +1 for a1 and a2, -1 for a3) and their contexts."""
    ctx = pl.DataFrame(
        {
            "anchor_id": ["a1", "a1", "a2", "a2", "a3", "a3"],
            "passage_id": ["n_wire", "f_202", "n_op", "f_10q", "n_op", "f_10q"],
            "source_family": ["news", "sec_filing", "news", "sec_filing", "news", "sec_filing"],
            "position": [1, 2, 1, 2, 1, 2],
        }
    )
    out = pl.DataFrame(
        {
            "anchor_id": ["a1", "a2", "a3"],
            "ticker": ["T1", "T2", "T3"],
            "event_type": [E] * 3,
            "horizon": ["1D"] * 3,
            "signal": [1, 1, 1],
            # a1 cites its wire story and its 8-K 2.02; a2 its opinion piece; a3 its 10-Q
            "valid_passages": [["n_wire", "f_202"], ["n_op"], ["f_10q"]],
            "cited_families": [["news", "sec_filing"], ["news"], ["sec_filing"]],
            "raw_json": ["{}"] * 3,
        },
        schema_overrides={"signal": pl.Int8},
    )
    lab = pl.DataFrame(
        {
            "ticker": ["T1", "T2", "T3"],
            "horizon": ["1D"] * 3,
            "maturity_day": [dt.date(2020, 5, 4)] * 3,
            "status": ["ok"] * 3,
            "y": [1, 1, -1],
            "z": [1.5, 1.5, -1.5],
        },
        schema_overrides={"y": pl.Int8},
    )
    return out, lab, ctx


def test_fine_families_keep_separate_cells_for_8k_202_and_10q_and_for_wire_and_opinion_news():
    out, lab, ctx = _day()
    keys = {a: E for a in ("a1", "a2", "a3")}
    fm = _fmap()
    fb = build_feedback(out, lab, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule("cited", "cited_correct", fm)).sort("anchor_id")
    assert fb["families"].to_list() == [["news:wire", "sec:8-K-2.02"], ["news:opinion"], ["sec:10-Q"]]
    m = SourceMemory(MemoryParams(), fm.families)
    assert m.apply(fb) == 4
    assert m.cell("news:wire", E, "1D") == (0.5, 0.0) and m.cell("sec:8-K-2.02", E, "1D") == (0.5, 0.0)
    assert m.cell("news:opinion", E, "1D") == (1.0, 0.0) and m.cell("sec:10-Q", E, "1D") == (0.0, 1.0)
    snap = m.to_frame()
    assert snap["source_family"].unique(maintain_order=True).to_list() == list(FINE)
    assert SourceMemory.from_frame(snap, MemoryParams(), FINE).cell("sec:10-Q", E, "1D") == (0.0, 1.0)
    with pytest.raises(ValueError, match="outside memory.families"):
        SourceMemory.from_frame(snap, MemoryParams())  # a fine snapshot read back as seed 000's
    # top-5 credit: every fine family of the context
    top5 = build_feedback(out, lab, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule("top5", "cited_correct", fm)).sort("anchor_id")
    assert top5["families"].to_list()[2] == ["news:opinion", "sec:10-Q"]


def test_fine_families_under_each_credit_rule_by_hand():
    """The fine family of every credited passage, worked out from _fmap: stances credit each
    passage's own fine family; top-5 credit gives an anchor without a context no family; cited
    credit needs the families of the cited passages only (an unmapped context passage is fine)."""
    out, lab, ctx = _day()
    keys = {a: E for a in ("a1", "a2", "a3")}
    fm = _fmap()
    ans = lambda st: json.dumps({"event_type": E, "signals": {}, "main_uncertainty": "", "stances": st})  # noqa: E731
    said = out.with_columns(pl.Series("raw_json", [ans({"N1": 1, "F1": 1}), ans({"N1": -1}), ans({"F1": -1})]))
    fb = build_feedback(said, lab, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule("cited", "passage_stance", fm)).sort("anchor_id")
    assert fb["families_right"].to_list() == [["news:wire", "sec:8-K-2.02"], [], ["sec:10-Q"]]  # labels +1, +1, -1
    assert fb["families_wrong"].to_list() == [[], ["news:opinion"], []]
    assert fb["families"].to_list() == [["news:wire", "sec:8-K-2.02"], ["news:opinion"], ["sec:10-Q"]]
    gone = lab.with_columns(pl.when(pl.col("ticker") == "T2").then(pl.lit("insufficient_history")).otherwise(pl.col("status")).alias("status"))
    a2 = build_feedback(said, gone, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule("cited", "passage_stance", fm)).filter(pl.col("anchor_id") == "a2")
    assert a2.select("outcome", "families_right", "families_wrong").rows() == [("label_unavailable", [], [])]  # no label: no passage is wrong
    top5 = build_feedback(out, lab, ctx.filter(pl.col("anchor_id") != "a3"), dt.date(2020, 5, 4), {}, keys, CreditRule("top5", "cited_correct", fm))
    a3 = top5.filter(pl.col("anchor_id") == "a3").row(0, named=True)
    assert (a3["families"], a3["outcome"]) == ([], "no_valid_citation")
    extra = pl.concat([ctx, pl.DataFrame({"anchor_id": ["a1"], "passage_id": ["never_mapped"], "source_family": ["news"], "position": [3]})])
    cited = build_feedback(out, lab, extra, dt.date(2020, 5, 4), {}, keys, CreditRule("cited", "cited_correct", fm)).sort("anchor_id")
    assert cited["families"].to_list() == [["news:wire", "sec:8-K-2.02"], ["news:opinion"], ["sec:10-Q"]]


def test_rerank_scores_each_passage_by_its_fine_family():
    fm = _fmap()
    m = SourceMemory(MemoryParams(kappa=1.0, delta=0.2), fm.families)
    for h in ("1D", "3D", "5D"):
        m.add("sec:10-Q", E, h, 50.0, True)  # 10-Qs very useful, 8-K 2.02 never seen
    cands = pl.DataFrame(
        {
            "anchor_id": ["a1"] * 2,
            "passage_id": ["f_202", "f_10q"],
            "source_family": ["sec_filing"] * 2,
            "relevance": [0.50, 0.45],
            "rank": [1, 2],
        }
    )
    ctx = rerank(cands, {"a1": E}, m, 0.3, 1, fm)
    assert ctx["passage_id"].to_list() == ["f_10q"] and ctx["source_family"].to_list() == ["sec_filing"]
    assert rerank(cands, {"a1": E}, m, 0.3, 1)["passage_id"].to_list() == ["f_202"]  # broad family: no 10-Q cell
    with pytest.raises(KeyError, match="never mapped"):
        rerank(cands.with_columns(pl.lit("zzz").alias("passage_id")), {"a1": E}, m, 0.3, 1, fm)


def test_family_map_counts_unlisted_publishers_and_seed000_changes_nothing():
    fm = _fmap()
    assert fm.unknown_publishers == {"Some Blog": 1} and fm.family("n_unk", "news") == "news:other"
    assert FAMILIES == SEED000 == FamilyMap("seed000").families
    out, lab, ctx = _day()
    keys = {a: E for a in ("a1", "a2", "a3")}
    for credit in ("cited", "top5"):
        before = build_feedback(out, lab, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule(credit))
        assert build_feedback(out, lab, ctx, dt.date(2020, 5, 4), {}, keys, CreditRule(credit, "cited_correct", FamilyMap("seed000"))).equals(before)
        assert set(before["families"].explode().drop_nulls().to_list()) <= {"news", "sec_filing"}
    assert SourceMemory(MemoryParams()).to_frame()["source_family"].unique(maintain_order=True).to_list() == ["news", "sec_filing"]
