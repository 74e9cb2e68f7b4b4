"""The experience tree in the lake: a small daily state (experience_tree) and the content of each
position written once (experience_leaves), joined back into the exact tree of each day."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.experience.store import CONTENT, STATE, content_versions, known_before, read_rows, read_tree, write_rows
from finrag_dagster.core.experience.tree import (
    ExperienceTree,
    Factor,
    ToEParams,
    content_changes,
    join_table,
    rows_schema,
    split_table,
    to_table,
)
from finrag_dagster.core.storage.lake import _WRITE_OPTS, file_digest
from finrag_dagster.core.tables import Lake, package_catalog

cal = nyse()
DAYS = [d.isoformat() for d in cal.sessions_in_range("2019-02-01", "2019-03-14")]  # 29 sessions
RNG = np.random.default_rng(7)
VECS = RNG.standard_normal((200, 384)).astype(np.float32)
VECS /= np.linalg.norm(VECS, axis=1, keepdims=True)


def prior(n_factors: int = 8, per_factor: int = 12) -> ExperienceTree:
    """A tree with ``per_factor`` 384-d principles under each of ``n_factors`` factors, the last factor leafless."""
    facs = [Factor(f"factor {i}", (f"kw{i}", f"cue{i}")) for i in range(n_factors)]
    tree = ExperienceTree(facs, ToEParams())
    for i, fac in enumerate(facs[:-1]):
        for j in range(per_factor):
            tree.expand(fac, f"principle {i}.{j}: the company reports event {j} of kind {i}", VECS[(i * per_factor + j) % 200])
    return tree


def run(lake: Lake, tree: ExperienceTree, days: list[str], tree_id: str = "toe") -> list[pa.Table]:
    """Write ``days`` of a tree that updates two utilities a day and expands one leaf every fifth day."""
    known = known_before(lake, tree_id, days[0])
    rows = []
    for k, d in enumerate(days):
        leaves = tree.leaves()
        tree.update(leaves[k % len(leaves)].leaf_id, "1D", 0.01 * (k + 1))
        tree.update(leaves[(3 * k) % len(leaves)].leaf_id, "5D", -0.02)
        leaves[k % len(leaves)].n_recall += 1
        if k % 5 == 4:
            tree.expand(tree.factors[k % len(tree.factors)], f"expanded on {d}", VECS[(150 + k) % 200])
        rows.append(to_table(tree))
        known, _ = write_rows(lake, tree_id, d, rows[-1], known)
    return rows


def _old_bytes(rows: pa.Table) -> int:
    """What one day cost before the split: the full rows in one parquet file."""
    buf = io.BytesIO()
    pq.write_table(rows, buf, **_WRITE_OPTS)
    return buf.tell()


def test_split_and_join_give_back_the_rows_and_the_schemas_are_the_lake_tables():
    rows = to_table(prior())
    state, content = split_table(rows)
    assert state.schema.equals(package_catalog()[STATE].schema) and content.schema.equals(package_catalog()[CONTENT].schema)
    assert rows.schema.equals(rows_schema()) and rows_schema().names[: len(content.schema)] == content.schema.names
    assert {"principle", "embedding", "keywords", "factor"}.isdisjoint(state.schema.names)
    versions = content.append_column("date", pa.array([DAYS[0]] * content.num_rows))
    assert join_table(state, versions, DAYS[0]).equals(rows)
    assert content_changes(content, content).num_rows == 0 and content_changes(content, None).num_rows == content.num_rows


def test_every_day_reads_back_its_own_tree_and_the_content_is_written_once(tmp_path):
    lake = Lake(tmp_path)
    rows = run(lake, prior(), DAYS)
    for d, want in zip(DAYS, rows):
        assert read_rows(lake, "toe", d).equals(want), d
    # content partitions: the first day (the whole tree) and the days a leaf was expanded, with only those rows
    written = lake.materialized_dates(CONTENT, tree_id="toe")
    assert written == [DAYS[0], *[d for k, d in enumerate(DAYS) if k % 5 == 4]]
    c = content_versions(lake, "toe", DAYS[-1])
    ids = [x for x in c.column("leaf_id").to_pylist() if x is not None]
    assert len(ids) == len(set(ids)) == len(prior().leaves()) + len(written) - 1  # no leaf stored twice
    for d in written[1:]:
        assert [p for p, dd in zip(c.column("principle").to_pylist(), c.column("date").to_pylist()) if dd.isoformat() == d] == [f"expanded on {d}"]
    # the factor without a leaf keeps its one content row; the state names it by position only
    assert c.filter(pa.compute.is_null(c.column("leaf_index"))).column("factor").to_pylist() == ["factor 7"]


def test_the_daily_state_does_not_grow_with_the_content(tmp_path):
    lake = Lake(tmp_path)
    rows = run(lake, prior(), DAYS)
    for d in DAYS:
        schema = pq.read_schema(lake.path(STATE, tree_id="toe", date=d))
        assert "embedding" not in schema.names and "principle" not in schema.names
    state_bytes = [lake.path(STATE, tree_id="toe", date=d).stat().st_size for d in DAYS]
    content_bytes = sum(f.stat().st_size for f in lake.partition_files(CONTENT, tree_id="toe"))
    old = [_old_bytes(r) for r in rows]
    # a day's state is a small fraction of a full snapshot: ~90 leaves of 384 floats are not in it
    assert max(state_bytes) * 10 < min(old)
    # over the month the two tables together cost less than two days of full snapshots
    assert sum(state_bytes) + content_bytes < 2 * old[-1] < sum(old) / 10


def test_same_trees_same_bytes_and_a_rerun_that_adds_nothing_leaves_no_content_partition(tmp_path):
    a, b = Lake(tmp_path / "a"), Lake(tmp_path / "b")
    run(a, prior(), DAYS[:10])
    run(b, prior(), DAYS[:10])
    files = lambda lake: {str(f.relative_to(lake.root)): file_digest(f) for t in (STATE, CONTENT) for f in lake.partition_files(t)}  # noqa: E731
    assert files(a) == files(b) and len(files(a)) == 10 + 3
    # day 4 expanded a leaf; its re-run with the tree of day 3 (nothing new) removes that partition
    d3 = read_tree(a, "toe", DAYS[3], ToEParams())
    write_rows(a, "toe", DAYS[4], to_table(d3), known_before(a, "toe", DAYS[4]))
    assert not a.exists(CONTENT, tree_id="toe", date=DAYS[4])
    assert read_rows(a, "toe", DAYS[4]).equals(to_table(d3))


def test_a_state_row_without_content_or_naming_another_leaf_is_an_error(tmp_path):
    rows = to_table(prior(2, 2))
    state, content = split_table(rows)
    versions = content.append_column("date", pa.array([DAYS[1]] * content.num_rows))
    with pytest.raises(ValueError, match="no content dated on or before it"):
        join_table(state, versions, DAYS[0])
    other = state.set_column(state.schema.get_field_index("leaf_id"), "leaf_id", pa.array(["L00001", "L00000", None]))
    with pytest.raises(ValueError, match="different leaves"):
        join_table(other, versions, DAYS[1])
    with pytest.raises(FileNotFoundError):
        read_rows(Lake(tmp_path), "toe", DAYS[0])
