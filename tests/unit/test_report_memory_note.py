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
