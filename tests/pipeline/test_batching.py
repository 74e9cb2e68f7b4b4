"""A range run and a day-by-day run of the same days give the same bytes.

The small lake was built by one range run (decisions 2019-02-01 .. 2019-03-06). A copy of it has
three days' decision partitions removed, inside the validation split and across a month end, and
rebuilt one day per run, as a schedule would; every rebuilt file must equal the range run's. It
covers the anchors (their near-duplicate look-back), the cards and pools, and the stateful loop
(memory and feedback of the day before) of two families.
"""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from finrag_dagster.core.storage.lake import file_digest
from finrag_dagster.core.tables import Lake
from finrag_dagster.defs.assets.variants import family_assets
from finrag_dagster.pipeline import run_range
from tests.instance import pooled_instance

DAYS = [dt.date(2019, 2, 27), dt.date(2019, 2, 28), dt.date(2019, 3, 1)]
FAMILIES = ("no_memory", "source_memory")
DECISION = ("anchors", "context_cards", "candidates")


def _files(root, days) -> dict[str, str]:
    out = {}
    for f in sorted(root.rglob("*.parquet")):
        rel = f.relative_to(root).as_posix()
        table = rel.split("/")[0]
        if table in DECISION + FAMILY_TABLES and any(f"date={d.isoformat()}" in rel for d in days):
            if table in FAMILY_TABLES and not any(f"variant={v}/" in rel for v in FAMILIES):
                continue
            out[rel] = file_digest(f)
    return out


FAMILY_TABLES = tuple(sorted({t for f in FAMILIES for t in family_assets(f)}))


@pytest.mark.slow
def test_day_by_day_runs_write_the_range_run_s_bytes(small_lake, tmp_path):
    lake_a, settings, _ = small_lake
    want = _files(lake_a.root, DAYS)
    assert {k.split("/")[0] for k in want} == set(DECISION + FAMILY_TABLES)
    root_b = tmp_path / "lake_b"
    shutil.copytree(lake_a.root, root_b)
    for rel in want:
        (root_b / rel).unlink()
    s_b = settings.with_overrides(lake_dir=root_b)
    only = list(DECISION) + [f"{f}/{t}" for f in FAMILIES for t in family_assets(f)]
    with pooled_instance() as inst:
        for d in DAYS:
            results = run_range(s_b, end=d, decision_start=d, history_start=d, instance=inst, only=only)
            assert all(r.success for r in results)
    got = _files(Lake(root_b).root, DAYS)
    assert got.keys() == want.keys()
    differing = sorted(k for k in want if want[k] != got[k])
    assert not differing, f"day-by-day runs wrote other bytes than the range run: {differing[:10]}"
