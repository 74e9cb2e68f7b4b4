"""The report names a source-memory extension wherever its rows appear, and says nothing for
seed 000's own memory (whose report keeps its bytes)."""

import polars as pl

from finrag_dagster.core.evaluation.report import LONG_SCHEMA, _test_tables, memory_note, render
from finrag_dagster.core.tables import Lake


def test_only_an_extension_gets_a_note_and_each_setting_is_named():
    assert memory_note("cited_correct", "seed000") == ""
    stance, fine = memory_note("passage_stance", "seed000"), memory_note("cited_correct", "fine")
    both = memory_note("passage_stance", "fine")
    assert "memory.credit = 'passage_stance'" in stance and "memory.families" not in stance
    assert "memory.families = 'fine'" in fine and "memory.credit" not in fine
    assert "memory.credit" in both and "memory.families" in both and "extension beyond seed 000" in both


def test_tables_2_and_3_carry_the_note_into_the_html(tmp_path):
    empty = pl.DataFrame(schema={k: v for k, v in LONG_SCHEMA.items() if k != "n"})
    note = memory_note("passage_stance", "fine")
    tables = _test_tables(empty, note)
    assert [t["note"] for t in tables[:2]] == [note, note] and tables[2]["note"] == ""
    assert [t["note"] for t in _test_tables(empty)] == ["", "", ""]
    out = render(Lake(tmp_path / "lake"), tmp_path / "r.html", {"test": ("2020-01-01", "2020-12-31")}, tables, [], [note])
    html = out.read_text()
    assert html.count("memory.families = &#39;fine&#39;") == 3  # the page's notes and under Tables 2 and 3


def test_learned_against_planted_plots_each_cell_and_only_with_a_truth(tmp_path):
    import datetime as dt

    from finrag_dagster.core.evaluation.report import learned_vs_planted_figure, planted_utilities
    from finrag_dagster.core.settings import Settings

    days = [dt.date(2019, 1, d) for d in (2, 3, 4)]
    snap = pl.DataFrame(
        {
            "date": days * 2,
            "source_family": ["news"] * 3 + ["sec_filing"] * 3,
            "event_type": ["Legal & Regulatory"] * 6,
            "horizon": ["1D"] * 6,
            "u_hat": [0.5, 0.6, 0.7, 0.5, 0.4, 0.3],
        }
    )
    planted = pl.DataFrame(
        {"source_family": ["news", "sec_filing"], "event_type": ["Legal & Regulatory"] * 2, "horizon": ["1D"] * 2, "planted": [0.8, 0.2]}
    )
    png = learned_vs_planted_figure(snap, planted)
    assert png and len(png) > 1000
    assert learned_vs_planted_figure(snap.filter(pl.col("source_family") == "news:wire"), planted) is None  # no seed 000 family
    s = Settings(lake_dir=str(tmp_path / "lake"))
    assert planted_utilities(s) is None  # no world written: no truth to plot
    truth = s.world_dir / "truth"
    truth.mkdir(parents=True)
    pl.DataFrame({"source_family": ["news"], "event_type": ["Legal & Regulatory"], "horizon": [1], "planted_prob": [0.8]}).write_parquet(
        truth / "source_utility.parquet"
    )
    assert planted_utilities(s)["horizon"].to_list() == ["1D"]
    assert planted_utilities(s.with_overrides(sources={"kind": "files"})) is None  # the user's data: no planted truth
