"""The Tree-of-Experience in the lake (seed 002 §4.2): a daily state and content written once.

* ``experience_tree/tree_id=T/date=D``: the state of tree T used on decision day D, one row per
  position (factor_index, leaf_index) with the leaf id, Q per horizon and recall/hit counts;
* ``experience_leaves/tree_id=T/date=D``: the content rows (factor, keywords, principle, support,
  embedding, horizons) of the positions whose content first appeared, or changed, in the tree of D
  — a leaf expanded on D, the whole induced tree on the first day it is written, a position reused
  with another principle after a prequential reset. No file when nothing new appeared on D.

The tree of D is D's state joined with the latest content version dated <= D of each of its
positions (:func:`.tree.join_table`): content from after D is never read for D, and
the daily partition grows with the number of positions, not with their text and embeddings.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from ..storage.lake import Lake
from .tree import ExperienceTree, ToEParams, content_changes, from_table, join_table, latest_content, merge_content, split_table

STATE = "experience_tree"
CONTENT = "experience_leaves"


def content_versions(lake: Lake, tree_id: str, through: str) -> pa.Table:
    """Every content row of ``tree_id`` in partitions dated on or before ``through``, with its date."""
    spec = lake.spec(CONTENT)
    parts = []
    for f in lake.partition_files(CONTENT, tree_id=tree_id):
        day = next(p[5:] for p in f.parts if p.startswith("date="))
        if day <= through:
            t = lake.read_parquet(f).select(spec.schema.names).cast(spec.schema)
            parts.append(t.append_column("date", pa.array([dt.date.fromisoformat(day)] * t.num_rows, type=pa.date32())))
    if not parts:
        return spec.schema.empty_table().append_column("date", pa.array([], type=pa.date32()))
    return pa.concat_tables(parts)


def read_rows(lake: Lake, tree_id: str, day: str) -> pa.Table:
    """The rows of tree ``tree_id`` used on ``day`` (its state joined with the content dated <= day)."""
    path = lake.path(STATE, tree_id=tree_id, date=day)
    if not lake.is_file(path):
        raise FileNotFoundError(f"{STATE} (tree_id {tree_id}) for {day} is not materialised")
    state = lake.read_parquet(path).cast(lake.spec(STATE).schema)
    return join_table(state, content_versions(lake, tree_id, day), day)


def read_tree(lake: Lake, tree_id: str, day: str, params: ToEParams) -> ExperienceTree:
    """The tree ``tree_id`` used on ``day``."""
    return from_table(read_rows(lake, tree_id, day), params)


def known_before(lake: Lake, tree_id: str, day: str) -> pa.Table:
    """The latest content version of every position of ``tree_id`` dated strictly before ``day``."""
    prev = (dt.date.fromisoformat(day) - dt.timedelta(days=1)).isoformat()
    return latest_content(content_versions(lake, tree_id, prev), prev)


def write_rows(lake: Lake, tree_id: str, day: str, rows: pa.Table, known: pa.Table) -> tuple[pa.Table, int]:
    """Write the tree of ``day`` (:func:`.tree.to_table` rows): its state, and its content rows that ``known``
    (the latest versions before ``day``) lacks as they are; returns the latest versions after ``day`` and the rows written."""
    state, content = split_table(rows)
    new = content_changes(content, known)
    lake.write(STATE, state, tree_id=tree_id, date=day)
    path = lake.path(CONTENT, tree_id=tree_id, date=day)
    if new.num_rows:
        lake.write(CONTENT, new, tree_id=tree_id, date=day)
    elif lake.is_file(path):  # a re-run of the day that no longer adds content
        lake.delete(path)
    return merge_content(known, new), new.num_rows
