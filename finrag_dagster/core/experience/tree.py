"""Tree-of-Experience (seed 002 §4.2, App. 8.5; docs/method.md §9): the structured experience memory.

A depth-2 tree: layer 1 = analytical factors (matched by keywords), layer 2 = analytical principles
under a factor (matched by embedding cosine); each root-to-leaf path holds a utility vector Q over
horizons in [0, 2·q0], a recall count and a hit count. Here: selection (eqs 6-11), the rule judge and
expander, the eq. 13 update (only after the horizon matured), and the tree's rows in the lake
(:func:`to_table`, :func:`split_table`, :func:`join_table`). The LLM paths (eq. 14, judge, rewrite)
are in :mod:`.llm`, the induction (eqs 3-5) in :mod:`.induction`. Rules and storage:
docs/experience.md, "The tree" and "`core/experience/tree.py`: design notes".
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, field

import numpy as np
import polars as pl
import pyarrow as pa

from ..formatting import md_table
from ..settings import HORIZON_KEYS


@dataclass
class Leaf:
    leaf_id: str
    factor: str
    principle: str
    embedding: np.ndarray  # unit vector
    q: dict[str, float]  # horizon -> utility in [0, 2 q0]
    n_recall: int = 0
    n_hit: int = 0
    support: int = 0  # pre-evaluation anchors it was induced from (0 for an expanded leaf)


@dataclass
class Factor:
    name: str
    keywords: tuple[str, ...]
    leaves: list[Leaf] = field(default_factory=list)


@dataclass(frozen=True)
class ToEParams:
    k1: int = 8
    leaf_threshold: float = 0.8
    q0: float = 1.0
    eta: float = 10.0
    horizons: tuple[str, ...] = HORIZON_KEYS

    @classmethod
    def from_settings(cls, s) -> "ToEParams":
        """The tree's parameters from ``s.experience`` (a Settings object)."""
        e = s.experience
        return cls(k1=e.k1, leaf_threshold=e.leaf_threshold, q0=e.q0, eta=e.eta, horizons=tuple(e.horizons))


@dataclass
class Selection:
    leaf: Leaf | None
    factor: Factor | None
    rho: float
    score: float
    expand: bool
    candidates: list[tuple[str, float]]  # (leaf id, S) of the leaves that cleared the threshold


def keyword_match(text: str, keywords: tuple[str, ...]) -> float:
    """f_match^(1): share of a factor's keywords present in the text (word boundaries), in [0, 1]."""
    if not keywords:
        return 0.0
    low = (text or "").lower()
    hits = sum(1 for k in keywords if re.search(rf"(?<![\w]){re.escape(k.lower())}(?![\w])", low))
    return hits / len(keywords)


def formula_update(q: float, r: float, n_hit: int, q0: float = 1.0, eta: float = 10.0) -> float:
    """seed 002 eq. 13 for one horizon component, clipped to [0, 2 q0]."""
    step = eta * (1.0 - ((q - q0) / q0) ** 2) / (1.0 + math.log(1.0 + n_hit))
    return float(min(max(q + step * r, 0.0), 2.0 * q0))


class ExperienceTree:
    def __init__(self, factors: list[Factor], params: ToEParams = ToEParams()):
        self.factors = factors
        self.params = params
        self._next = sum(len(f.leaves) for f in factors)

    def leaves(self) -> list[Leaf]:
        return [leaf for f in self.factors for leaf in f.leaves]

    def utility(self, leaf: Leaf, horizon: str | None) -> float:
        """Q_h, or the mean over the tree's horizons when ``horizon`` is None (one prompt, all horizons)."""
        if horizon is not None:
            return leaf.q[horizon]
        return float(sum(leaf.q[h] for h in self.params.horizons) / len(self.params.horizons))

    def select(self, text: str, embedding: np.ndarray, horizon: str | None, count: bool = True) -> Selection:
        """Coarse-to-fine selection of a path for a task state (eqs 7-11); S = ρ·Q_h (mean_h Q_h
        when ``horizon`` is None). ``count``: add the recall to the best leaf (False when a judge
        decides afterwards which leaf is used)."""
        p = self.params
        f1 = sorted(((keyword_match(text, f.keywords), i) for i, f in enumerate(self.factors)), key=lambda x: (-x[0], x[1]))
        kept = [(m, self.factors[i]) for m, i in f1[: p.k1] if m > 0]
        best, cands = None, []
        for m1, fac in kept:
            for leaf in fac.leaves:
                cos = float(np.dot(embedding, leaf.embedding))
                if cos < p.leaf_threshold:
                    continue
                rho = math.sqrt(m1 * max(cos, 0.0))
                s = rho * self.utility(leaf, horizon)
                cands.append((leaf.leaf_id, s))
                if best is None or s > best[0]:
                    best = (s, rho, leaf, fac)
        if best is None:  # the embedded judge: nothing clears the threshold -> expand under the best factor
            fac = kept[0][1] if kept else None
            return Selection(None, fac, 0.0, 0.0, fac is not None, cands)
        s, rho, leaf, fac = best
        if count:
            leaf.n_recall += 1
        return Selection(leaf, fac, rho, s, False, cands)

    def expand(self, factor: Factor, principle: str, embedding: np.ndarray) -> Leaf:
        """A new leaf under ``factor`` with Q_init = q0 on every horizon."""
        leaf = Leaf(f"L{self._next:05d}", factor.name, principle, embedding, {h: self.params.q0 for h in self.params.horizons})
        self._next += 1
        factor.leaves.append(leaf)
        return leaf

    def update(self, leaf_id: str, horizon: str, reward: float) -> float:
        """Apply matured feedback r = sign(score)·α to one horizon of a path (eq. 13)."""
        leaf = next(x for x in self.leaves() if x.leaf_id == leaf_id)
        leaf.q[horizon] = formula_update(leaf.q[horizon], reward, leaf.n_hit, self.params.q0, self.params.eta)
        leaf.n_hit += 1
        return leaf.q[horizon]

    def to_markdown(self) -> str:
        return render_markdown(self)


# ------------------------------------------------------------------ the lake tables
STATE_ONLY = ("q", "n_recall", "n_hit")  # the columns of a row that change from day to day
POSITION = ("factor_index", "leaf_index")  # what joins a state row to its content


def _specs():
    from ..storage.schemas import EXPERIENCE_LEAVES, EXPERIENCE_TREE

    return EXPERIENCE_TREE, EXPERIENCE_LEAVES


def rows_schema() -> pa.Schema:
    """The tree's rows: the content columns (``experience_leaves``), then Q and the counts."""
    state, content = _specs()
    return pa.schema([*content.schema, *(state.schema.field(n) for n in STATE_ONLY)])


def to_table(tree: ExperienceTree) -> pa.Table:
    """The tree as rows (:func:`rows_schema`), in tree order."""
    hs = list(tree.params.horizons)
    schema = rows_schema()
    cols: dict[str, list] = {f.name: [] for f in schema}
    for fi, fac in enumerate(tree.factors):
        rows = [(li, leaf) for li, leaf in enumerate(fac.leaves)] or [(None, None)]
        for li, leaf in rows:
            cols["factor_index"].append(fi)
            cols["factor"].append(fac.name)
            cols["keywords"].append(list(fac.keywords))
            cols["leaf_index"].append(li)
            if leaf is None:
                for k in ("leaf_id", "principle", "support", "embedding", "horizons", "q", "n_recall", "n_hit"):
                    cols[k].append(None)
                continue
            missing = [h for h in hs if h not in leaf.q]
            if missing or set(leaf.q) - set(hs):
                raise ValueError(f"leaf {leaf.leaf_id}: utilities for {sorted(leaf.q)}, the tree's horizons are {hs}")
            cols["leaf_id"].append(leaf.leaf_id)
            cols["principle"].append(leaf.principle)
            cols["support"].append(int(leaf.support))
            cols["embedding"].append(np.asarray(leaf.embedding, dtype=np.float32))
            cols["horizons"].append(hs)
            cols["q"].append([float(leaf.q[h]) for h in hs])
            cols["n_recall"].append(int(leaf.n_recall))
            cols["n_hit"].append(int(leaf.n_hit))
    arrays = []
    for f in schema:
        if f.name == "embedding":
            arrays.append(_float32_lists(cols[f.name], f.type))
        else:
            arrays.append(pa.array(cols[f.name], type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def split_table(rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(state, content) of the tree's rows: the ``experience_tree`` and ``experience_leaves`` columns."""
    state, content = _specs()
    return rows.select(state.schema.names).cast(state.schema), rows.select(content.schema.names).cast(content.schema)


def _take(t: pa.Table, rows: list[int]) -> pa.Table:
    return t.take(pa.array(rows, type=pa.int64()))


def _positions(t: pa.Table) -> list[tuple[int, int | None]]:
    return list(zip(t.column("factor_index").to_pylist(), t.column("leaf_index").to_pylist()))


def _versions(content: pa.Table) -> list[tuple[tuple[int, int | None], tuple]]:
    """(position, everything else of the row) per content row; embeddings compared by their bytes."""
    names = [n for n in _specs()[1].schema.names if n not in POSITION and n != "embedding"]
    vals = [content.column(n).to_pylist() for n in names]
    emb = content.column("embedding").combine_chunks() if content.num_rows else None
    out = []
    for i, pos in enumerate(_positions(content)):
        e = emb[i].values.to_numpy(zero_copy_only=False).tobytes() if emb[i].is_valid else None
        out.append((pos, (*(v[i] for v in vals), e)))
    return out


def content_changes(content: pa.Table, known: pa.Table | None) -> pa.Table:
    """Rows of ``content`` new to ``known`` or differing from its version of their position (e.g. reused after a reset)."""
    have = dict(_versions(known)) if known is not None else {}
    return _take(content, [i for i, (pos, v) in enumerate(_versions(content)) if have.get(pos) != v])


def merge_content(known: pa.Table | None, changes: pa.Table) -> pa.Table:
    """The latest version of every position once ``changes`` is written after ``known``."""
    if known is None or known.num_rows == 0:
        return changes
    new = set(_positions(changes))
    return pa.concat_tables([_take(known, [i for i, pos in enumerate(_positions(known)) if pos not in new]), changes])


def _day(x) -> dt.date:
    if isinstance(x, dt.datetime):
        return x.date()
    return x if isinstance(x, dt.date) else dt.date.fromisoformat(str(x)[:10])


def latest_content(versions: pa.Table, through) -> pa.Table:
    """Per position the content version with the latest ``date`` <= ``through`` (never a later one), without the date."""
    cut = _day(through)
    dates = [_day(x) for x in versions.column("date").to_pylist()]
    best: dict[tuple, int] = {}
    for i, pos in enumerate(_positions(versions)):
        if dates[i] <= cut and (pos not in best or dates[i] > dates[best[pos]]):
            best[pos] = i
    return _take(versions, sorted(best.values())).select(_specs()[1].schema.names)


def join_table(state: pa.Table, versions: pa.Table, day) -> pa.Table:
    """The tree's rows on ``day``: its state rows, each with its position's latest content dated <= ``day`` (none: an error)."""
    content = latest_content(versions, day)
    at = {pos: i for i, pos in enumerate(_positions(content))}
    pos = _positions(state)
    missing = [p for p in pos if p not in at]
    if missing:
        raise ValueError(f"experience tree of {day}: no content dated on or before it for the positions {missing[:5]}")
    c = _take(content, [at[p] for p in pos])
    ids = list(zip(state.column("leaf_id").to_pylist(), c.column("leaf_id").to_pylist()))
    bad = [(p, a, b) for p, (a, b) in zip(pos, ids) if a != b]
    if bad:
        raise ValueError(f"experience tree of {day}: the state and the content name different leaves at (position, state, content) {bad[:5]}")
    schema = rows_schema()
    return pa.Table.from_arrays([(state if f.name in STATE_ONLY else c).column(f.name).combine_chunks().cast(f.type) for f in schema], schema=schema)


def _float32_lists(values: list, typ: pa.DataType) -> pa.Array:
    """list<float32> from numpy vectors without a round trip through Python floats."""
    offsets, chunks, valid = [0], [], []
    for v in values:
        if v is None:
            valid.append(False)
        else:
            valid.append(True)
            chunks.append(np.asarray(v, dtype=np.float32).ravel())
        offsets.append(offsets[-1] + (0 if v is None else chunks[-1].size))
    flat = pa.array(np.concatenate(chunks) if chunks else np.zeros(0, np.float32), type=pa.float32())
    mask = pa.array([not x for x in valid], type=pa.bool_())
    return pa.ListArray.from_arrays(pa.array(offsets, type=pa.int32()), flat, type=typ, mask=mask)


def from_table(data: pa.Table | pl.DataFrame, params: ToEParams = ToEParams()) -> ExperienceTree:
    """Rebuild a tree from its rows (:func:`to_table`, :func:`join_table`; other columns are ignored).

    The utilities' horizons must be the tree's (``params.horizons``), in that order.
    """
    t = data.to_arrow() if isinstance(data, pl.DataFrame) else data
    names = rows_schema().names
    missing = [n for n in names if n not in t.column_names]
    if missing:
        raise ValueError(f"experience tree rows lack columns {missing}")
    t = t.select(names)
    if t.num_rows > 1:
        t = t.sort_by([("factor_index", "ascending"), ("leaf_index", "ascending")])
    rows = t.to_pylist()
    emb = t.column("embedding").combine_chunks() if t.num_rows else None
    factors: list[Factor] = []
    index: dict[int, Factor] = {}
    for i, r in enumerate(rows):
        fac = index.get(r["factor_index"])
        if fac is None:
            fac = Factor(r["factor"], tuple(r["keywords"] or ()))
            index[r["factor_index"]] = fac
            factors.append(fac)
        if r["leaf_id"] is None:
            continue
        hs = tuple(r["horizons"] or ())
        if hs != tuple(params.horizons):
            raise ValueError(f"leaf {r['leaf_id']}: stored horizons {hs} differ from the tree's {tuple(params.horizons)}")
        vec = emb[i].values.to_numpy(zero_copy_only=False).astype(np.float32, copy=True)
        fac.leaves.append(
            Leaf(
                r["leaf_id"],
                fac.name,
                r["principle"],
                vec,
                dict(zip(hs, (float(x) for x in r["q"]))),
                int(r["n_recall"]),
                int(r["n_hit"]),
                int(r["support"]),
            )
        )
    return ExperienceTree(factors, params)


def _cell(text: str, width: int = 140) -> str:
    s = (text or "").replace("|", "/").replace("\n", " ").strip()
    return s[:width] + ("…" if len(s) > width else "")


def render_markdown(tree: ExperienceTree, title: str | None = None, max_leaves: int | None = None) -> str:
    """The tree as seed 002 Table 5: factor → analysis direction, Q per horizon, recall/hit, id.

    ``max_leaves`` caps the principles shown per factor (the rest are counted)."""
    hs = tree.params.horizons
    n_leaves = sum(len(f.leaves) for f in tree.factors)
    lines = []
    if title:
        lines += [f"**{_cell(title)}**", ""]
    if not tree.factors:
        return "\n".join(lines + ["_no tree: nothing induced yet_"])
    lines += [
        f"{len(tree.factors)} factors, {n_leaves} principles; Q per horizon ({', '.join(hs)}) in "
        f"[0, {2 * tree.params.q0:g}], neutral {tree.params.q0:g}.",
        "",
    ]
    rows = []
    for f in tree.factors:
        name = f"**{_cell(f.name)}**"
        if not f.leaves:
            rows.append([name, f"_no principle yet_ ({_cell(', '.join(f.keywords[:6]), 60)})", "", "", "", ""])
            continue
        shown = f.leaves if max_leaves is None else f.leaves[:max_leaves]
        for i, leaf in enumerate(shown):
            qs = "[" + ", ".join(f"{leaf.q[h]:.4f}" for h in hs) + "]"
            rows.append([name if i == 0 else "", _cell(leaf.principle), qs, f"{leaf.n_recall}/{leaf.n_hit}", leaf.support, f"`{leaf.leaf_id}`"])
        if len(shown) < len(f.leaves):
            rows.append(["", f"_… {len(f.leaves) - len(shown)} more_", "", "", "", ""])
    columns = ["factor", "analysis direction", "Q (" + ", ".join(hs) + ")", "recall/hit", "support", "id"]
    return "\n".join([*lines, md_table(columns, rows)])
