"""Planted point-in-time leaks: each one a known way to let a decision see the future.

``LEAKS`` maps a leak's name to ``Leak(apply, catchers, description)``:

* ``apply(p)`` replaces a real function (or method, or a model's SQL) of ``finrag_dagster`` with a
  leaky version through the :class:`Patcher` ``p`` (monkeypatch-like, undone at the end). A leaky
  version is either a wrapper that shifts an argument (a day, a timestamp) or the real function
  recompiled from its own source with one expression changed (:func:`rewrite`): that is the bug
  one would write by mistake, in the code the pipeline runs.
* ``catchers``: pytest node ids that must FAIL while the leak is planted (and pass without it).
* ``description``: the leak in one line.

Nothing here runs unless asked: :mod:`tests.leaks.plugin` applies one leak when
``FINRAG_PLANTED_LEAK=<name>`` is set, and ``tests/leaks/test_leaks.py`` runs the catchers of every
leak in a subprocess with the leak planted (see docs/leaks.md). No module of ``finrag_dagster``
reads that variable.
"""

from __future__ import annotations
import __future__ as _future

import datetime as dt
import inspect
import linecache
import shutil
import sys
import tempfile
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

ENV = "FINRAG_PLANTED_LEAK"
NULL = "__null__"  # ENV value: the null mutation of every leak at once (the catchers must pass)
REPORT_ENV = "FINRAG_PLANTED_LEAK_REPORT"  # where the plugin writes what it patched (JSON)
_DAY_NS = 86_400 * 10**9


class PlantError(RuntimeError):
    """A leak could not be planted (the code it mutates changed): the plant must be updated."""


class Patcher:
    """A minimal monkeypatch: ``replace`` swaps an attribute and every alias of the old object
    held by an already-imported ``finrag_dagster`` or ``tests`` module (``from x import f``);
    modules imported later get the new object from its home module. ``undo`` restores all.

    ``null=True`` plants the *null mutation* of every leak: :func:`rewrite` recompiles the real
    source without its edit (checking the edit still fits) and wrapper plants are skipped, so the
    catchers must pass; that proves a catcher fails because of the edit, not the machinery."""

    def __init__(self, null: bool = False) -> None:
        self.null = null
        self._undo: list[tuple[object, str, object, bool]] = []
        self._cleanups: list[Callable[[], None]] = []
        self.patched: list[str] = []

    def on_undo(self, fn: Callable[[], None]) -> None:
        self._cleanups.append(fn)

    def setattr(self, owner: object, name: str, value: object, raising: bool = True) -> None:
        had = name in vars(owner) if isinstance(owner, type) else hasattr(owner, name)
        if raising and not had:
            raise PlantError(f"{_label(owner)} has no attribute {name!r}: the planted leak is out of date")
        old = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name, None)
        self._undo.append((owner, name, old, had))
        setattr(owner, name, value)

    def replace(self, owner: object, name: str, new: object, _recompiled: bool = False) -> int:
        """Replace ``owner.name`` (a module function, a class attribute) and its aliases; returns
        the number of places changed."""
        old = vars(owner)[name] if isinstance(owner, type) and name in vars(owner) else getattr(owner, name, None)
        if old is None:
            raise PlantError(f"{_label(owner)}.{name} does not exist: the planted leak is out of date")
        if self.null and not _recompiled:
            self.patched.append(f"{_label(owner)}.{name} (wrapper skipped: null mutation)")
            return 0
        self.setattr(owner, name, new)
        n = 1
        if not isinstance(owner, type):  # module-level objects may have been imported elsewhere by name
            for mod in list(sys.modules.values()):
                if mod is owner or not isinstance(mod, types.ModuleType):
                    continue
                if not (mod.__name__.startswith("finrag_dagster") or mod.__name__.startswith("tests")):
                    continue
                for k, v in list(vars(mod).items()):
                    if v is old:
                        self.setattr(mod, k, new)
                        n += 1
        self.patched.append(f"{_label(owner)}.{name} ({n} reference{'s' if n > 1 else ''}){' recompiled unchanged' if self.null else ''}")
        return n

    def undo(self) -> None:
        while self._undo:
            owner, name, old, had = self._undo.pop()
            if had:
                setattr(owner, name, old)
            else:
                delattr(owner, name)
        while self._cleanups:
            self._cleanups.pop()()


def _label(owner: object) -> str:
    if isinstance(owner, types.ModuleType):
        return owner.__name__
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}"
    return repr(owner)


def rewrite(p: Patcher, owner: object, name: str, edits: list[tuple[str, str]], extra: dict | None = None) -> None:
    """Recompile ``owner.name`` from its own source with each ``old`` text replaced by ``new``
    (each ``old`` must occur exactly once), in its module's namespace and with its module's
    ``from __future__`` flags, and put it in place. ``extra``: helper objects added to the module
    namespace for the new code. Under a null Patcher the source is recompiled unchanged."""
    raw = vars(owner)[name] if isinstance(owner, type) else getattr(owner, name)
    fn = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    fn = inspect.unwrap(fn)
    lines, first = inspect.getsourcelines(fn)
    src = textwrap.dedent("".join(lines))
    for old, new in edits:
        n = src.count(old)
        if n != 1:
            raise PlantError(
                f"{fn.__module__}.{fn.__qualname__}: expected the text {old!r} exactly once, found it {n} times; "
                "the code changed, update the planted leak"
            )
        if not p.null:
            src = src.replace(old, new)
    module = sys.modules[fn.__module__]
    for k, v in (extra or {}).items():
        p.setattr(module, k, v, raising=False)
    # the source keeps its line numbers (tracebacks point at the file's lines) and is registered in
    # linecache under its own name, so inspect can read it again (a second plant of the same function)
    text = "\n" * (first - 1) + src
    filename = f"<planted leak: {fn.__module__}.{fn.__qualname__}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    flags = _future.annotations.compiler_flag if getattr(module, "annotations", None) is _future.annotations else 0
    code = compile(text, filename, "exec", flags=flags, dont_inherit=True)
    ns: dict = {}
    exec(code, module.__dict__, ns)
    new = ns[fn.__name__]
    if isinstance(raw, staticmethod) and not isinstance(new, staticmethod):
        new = staticmethod(new)
    p.replace(owner, name, new, _recompiled=True)


# ====================================================================== the leaks
def _feedback_on_decision_day(p: Patcher) -> None:
    """core.loop: the memory (and the ToE tree) of day D takes the feedback matured ON D."""
    from finrag_dagster.core import loop

    orig_m, orig_t = loop.matured_on, loop.toe_matured_on

    def matured_on(prev_day, v, env, recent, split_start):
        return orig_m(env.cal.offset(prev_day, 1).isoformat(), v, env, recent, split_start)

    def toe_matured_on(prev_day, v, env, tree, recent, split_start):
        return orig_t(env.cal.offset(prev_day, 1).isoformat(), v, env, tree, recent, split_start)

    p.replace(loop, "matured_on", matured_on)
    p.replace(loop, "toe_matured_on", toe_matured_on)


def _toe_feedback_on_decision_day(p: Patcher) -> None:
    """core.loop: only the ToE tree of day D takes the eq. 13 updates matured ON D."""
    from finrag_dagster.core import loop

    orig_t = loop.toe_matured_on

    def toe_matured_on(prev_day, v, env, tree, recent, split_start):
        return orig_t(env.cal.offset(prev_day, 1).isoformat(), v, env, tree, recent, split_start)

    p.replace(loop, "toe_matured_on", toe_matured_on)


def _feedback_cutoff_inclusive_of_decision_day(p: Patcher) -> None:
    """core.memory.feedback.build_feedback: a label maturing the day after ``as_of_day`` counts."""
    from finrag_dagster.core.memory import feedback

    rewrite(p, feedback, "build_feedback", [('pl.col("maturity_day") <= as_of_day', 'pl.col("maturity_day") <= as_of_day + dt.timedelta(days=1)')])


def _portfolio_same_day(p: Patcher) -> None:
    from finrag_dagster.core.evaluation import portfolio

    rewrite(p, portfolio, "strategy_targets", [("for j in range(1, hold + 1):", "for j in range(0, hold):")])


def _experience_task_release_on_maturity(p: Patcher) -> None:
    from finrag_dagster.core.experience import task as experience_task

    rewrite(p, experience_task, "_release_matured", [("if mat >= t:", "if mat > t:")])


def _task_alpha_matures_early(p: Patcher) -> None:
    from finrag_dagster.core.experience import task as experience_task

    rewrite(p, experience_task, "excess_returns", [("math.expm1(v) - rm, sessions[j]))", "math.expm1(v) - rm, sessions[j - 1]))")])


def _label_maturity_early(p: Patcher) -> None:
    from finrag_dagster.core import labels

    rewrite(p, labels, "_label_record", [("mat = cal.sessions[k + h].item()", "mat = cal.sessions[k + h - 1].item()")])


def _bm25_whole_store(p: Patcher) -> None:
    from finrag_dagster.core.retrieval.lexical import PrefixStats

    orig = PrefixStats.advance

    def advance(self, n):
        return orig(self, self.tm.X.shape[0])  # N, df and avgdl of every stored passage, future ones too

    p.replace(PrefixStats, "advance", advance)


def _minmax_over(x: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Min-max of ``x`` with the bounds of ``ref`` (the leak: bounds from the whole store)."""
    lo, hi = float(ref.min()), float(ref.max())
    return np.full(x.shape, 0.5) if hi - lo <= 0 else (x - lo) / (hi - lo)


def _dense_minmax_whole_store(p: Patcher) -> None:
    from finrag_dagster.core.retrieval import pool

    # the numba kernels hand every group to the numpy reference, which gets the leak
    p.replace(pool, "_group_numba", lambda *a, **k: None)
    rewrite(
        p,
        pool,
        "_group_numpy",
        [("r = (minmax(pb) + minmax(pd)) / 2", "r = (minmax(pb) + _leak_minmax_over(pd, (store.emb @ store.emb[ar]).astype(np.float64))) / 2")],
        extra={"_leak_minmax_over": _minmax_over},
    )


def _pool_sees_decision_time(p: Patcher) -> None:
    from finrag_dagster.core.retrieval.pool import Store

    rewrite(p, Store, "prefix_end", [('side="left"', 'side="right"')])


def _class_weights_current_split(p: Patcher) -> None:
    """core.loop_io.weights_for: pi_y from the split being evaluated, all its labels."""
    import polars as pl

    from finrag_dagster.core import loop_io
    from finrag_dagster.core.memory.feedback import label_frequencies
    from finrag_dagster.core.memory.source_memory import class_weights
    from finrag_dagster.core.splits import split_bounds

    def weights_for(s, cal, lake, start):
        cur = [b for b in split_bounds(s, cal) if b[0] <= start <= b[1]]
        if not cur:
            return {h: {y: 1.0 for y in (-1, 0, 1)} for h in ("1D", "3D", "5D")}, {}
        lab = lake.read_range("labels", *cur[0])
        freq = label_frequencies(lab.filter(pl.col("status") == "ok"))
        if not freq:
            return {h: {y: 1.0 for y in (-1, 0, 1)} for h in ("1D", "3D", "5D")}, {}
        return class_weights(freq), freq

    p.replace(loop_io, "weights_for", weights_for)


def _class_weights_unmatured(p: Patcher) -> None:
    """core.loop_io.weights_for: the previous split's labels, including those that mature
    on or after the split start (the maturity cut dropped)."""
    from finrag_dagster.core import loop_io

    rewrite(p, loop_io, "weights_for", [('lab = lab.filter(pl.col("maturity_day") < dt.date.fromisoformat(start))', "lab = lab")])


def _table6_labels_matured_in_test(p: Patcher) -> None:
    from finrag_dagster.core.evaluation import sensitivity

    rewrite(p, sensitivity, "table6", [('labels = labels.filter(pl.col("maturity_day") < test_start)', "labels = labels")])


def _table6_on_test_split(p: Patcher) -> None:
    from finrag_dagster.core.evaluation import sensitivity

    rewrite(
        p,
        sensitivity,
        "table6",
        [('days = split_days(s, cal, lake, "validation")', 'days = split_days(s, cal, lake, "test") or split_days(s, cal, lake, "validation")')],
    )


def _table6_cut_at_first_materialised_test_day(p: Patcher) -> None:
    from finrag_dagster.core.evaluation import sensitivity

    rewrite(
        p,
        sensitivity,
        "table6",
        [
            (
                "test_start = test_sessions[0] if test_sessions else cal.offset(days[-1], 1)",
                'test_start = dt.date.fromisoformat((split_days(s, cal, lake, "test") or [cal.offset(days[-1], 1).isoformat()])[0])',
            )
        ],
    )


def _label_window_to_d19(p: Patcher) -> None:
    from finrag_dagster.core import labels

    rewrite(p, labels, "compute_labels", [("ends = np.array([k - lo - gap - h for k in ks]", "ends = np.array([k - lo - gap - h + 1 for k in ks]")])


def _date_only_midnight_utc(p: Patcher) -> None:
    from finrag_dagster.core import calendar

    def date_only_public_ns(days):
        return np.asarray(days, dtype="datetime64[D]").astype("datetime64[ns]").astype(np.int64)  # 00:00 UTC

    p.replace(calendar, "date_only_public_ns", date_only_public_ns)


def _edgar_filing_date(p: Patcher) -> None:
    from finrag_dagster.sources.edgar import loader

    orig = loader._accepted_frame

    def _accepted_frame(rows, cal):
        for r in rows:
            if r.get("filed_date") is not None:  # the filing date at 00:00 UTC instead of the acceptance time
                f = r["filed_date"]
                r["public_ns"] = int(dt.datetime(f.year, f.month, f.day, tzinfo=dt.timezone.utc).timestamp()) * 10**9
        return orig(rows, cal)

    p.replace(loader, "_accepted_frame", _accepted_frame)


def _edgar_acceptance_unchecked(p: Patcher) -> None:
    from finrag_dagster.sources.edgar import merge

    p.replace(merge, "_acceptance_vs_filed", lambda g: None)  # an acceptance a month before its filing date is believed


def _after_close_same_day(p: Patcher) -> None:
    from finrag_dagster.core.calendar import TradingCalendar

    rewrite(
        p,
        TradingCalendar,
        "decision_days",
        [
            (
                'idx = np.searchsorted(self.closes_ns, public_ns, side="left")',
                'idx = np.searchsorted(self.closes_ns + 6 * 3_600 * 10**9, public_ns, side="left")',
            )
        ],
    )


def _dedup_reverse_time(p: Patcher) -> None:
    from finrag_dagster.core.dedup import ClusterIndex

    rewrite(
        p,
        ClusterIndex,
        "assign",
        [("for item in sorted(items, key=lambda x: x.order_key):", "for item in sorted(items, key=lambda x: x.order_key, reverse=True):")],
    )


def _returns_read_next_close(p: Patcher) -> None:
    """finrag_dagster/dbt_like_sql/returns.sql: ret_1d against the NEXT session's close (the card on D sees close(D+1))."""
    from finrag_dagster.core.storage import sqlmodels

    orig = sqlmodels.load_model
    tmp = Path(tempfile.mkdtemp(prefix="planted_leak_sql_"))
    p.on_undo(lambda: shutil.rmtree(tmp, ignore_errors=True))

    def load_model(path):
        path = Path(path)
        if path.name != "returns.sql":
            return orig(path)
        old = "LEFT JOIN bars AS l1 ON l1.ticker = b.ticker AND l1.session_idx = b.session_idx - 1"
        text = path.read_text()
        if text.count(old) != 1:
            raise PlantError(f"{path}: expected {old!r} once; update the planted leak")
        (tmp / path.name).write_text(text.replace(old, old[:-4] + " + 1"))
        return orig(tmp / path.name)

    p.replace(sqlmodels, "load_model", load_model)


def _search_as_of_inclusive(p: Patcher) -> None:
    from finrag_dagster.core.retrieval.search import SearchIndex

    rewrite(
        p,
        SearchIndex,
        "__init__",
        [('pl.col("public_time").dt.epoch("ns") < as_of_ns', 'pl.col("public_time").dt.epoch("ns") <= as_of_ns + 3_600 * 10**9')],
    )


def _tree_induced_on_validation(p: Patcher) -> None:
    from finrag_dagster.core import splits

    # induced at the end of the validation split, from train + validation anchors
    for fn in ("induction_day", "train_days_before"):
        rewrite(p, splits, fn, [("a, b = s.splits.train", "a, b = s.splits.train[0], s.splits.validation[1]")])


def _tree_content_after_d(p: Patcher) -> None:
    from finrag_dagster.core.experience import store as experience_store
    from finrag_dagster.core.experience import tree as experience_tree

    # the tree of D reads the latest content version of each position, dated after D too
    rewrite(p, experience_store, "content_versions", [("if day <= through:", "if True:")])
    rewrite(p, experience_tree, "latest_content", [("if dates[i] <= cut and (", "if (")])


def _fiscal_calendar_later_10k(p: Patcher) -> None:
    from finrag_dagster.core.retrieval import fiscal

    # the fiscal calendar of a query uses filings accepted after its as-of time too
    rewrite(p, fiscal, "calendars", [('& (pl.col("public_time") < as_of)', "")])


def _results_release_after_as_of(p: Patcher) -> None:
    from finrag_dagster.core.retrieval import engine as search_engine

    # an earnings query's results release picked from 8-Ks accepted after its as-of time too
    rewrite(p, search_engine, "release_dates", [('& (pl.col("public_time").dt.epoch("ns") < as_of_ns)', "")])


class Leak(NamedTuple):
    apply: Callable[[Patcher], None]
    catchers: list[str]
    description: str
    slow: bool = False  # its only catcher is a pipeline test
    expect: tuple[str, ...] = ("AssertionError",)  # how a catcher must fail (an error elsewhere means a broken plant)


def _minute_stamp_at_start(p: Patcher) -> None:
    from finrag_dagster.sources.news import clock

    rewrite(p, clock, "news_public_ns", [("public[is_minute] += 59 * _SEC_NS", "public[is_minute] += 0")])


def _minute_only_stamp_at_its_start(p: Patcher) -> None:
    from finrag_dagster.sources.news import clock

    rewrite(p, clock, "news_public_ns", [('is_minute = timed & (all_minute | c["minute_only"])', "is_minute = timed & all_minute")])


def _fnspid_clock_trusted(p: Patcher) -> None:
    from finrag_dagster.sources import registry
    from finrag_dagster.sources.news import load

    rewrite(p, load, "load_news", [("clock = clock or NewsClock(dates_only=dates_only)", "clock = clock or NewsClock(dates_only=False)")])
    rewrite(p, registry, "news_clock", [('else src.kind != "synthetic"', "else False")])


def _local_midnight_timed(p: Patcher) -> None:
    from finrag_dagster.sources.news import clock

    rewrite(p, clock, "_clock_parts", [("is_date = ~trusted | no_time | (wall_sec == 0)", "is_date = ~trusted | no_time | ((ts % _DAY_NS) == 0)")])


def _edgar_date_only_at_midnight(p: Patcher) -> None:
    from finrag_dagster.sources.edgar import records

    edit = 'return int(date_only_public_ns(np.array([day], dtype="datetime64[D]"))[0]), str(value).strip()'
    rewrite(p, records, "_acceptance_ns", [(edit, "return _utc_ns(value), str(value).strip()")])


def _edgar_duplicate_keeps_earlier(p: Patcher) -> None:
    from finrag_dagster.sources.edgar import merge

    rewrite(p, merge, "_json_duplicates", [("keep = max(rs, key=", "keep = min(rs, key=")])


def _edgar_arrays_zipped(p: Patcher) -> None:
    from finrag_dagster.sources.edgar import submissions

    rewrite(p, submissions, "read_submissions_json", [("    if short:\n", "    if False:\n"), ('arr("items"), strict=True)', 'arr("items"))')])


def _anchors_range_window(p: Patcher) -> None:
    from finrag_dagster.core import anchors

    p.replace(anchors, "day_window", lambda clusters, window: clusters)


def _non_members_anchored(p: Patcher) -> None:
    from finrag_dagster.core import anchors

    rewrite(p, anchors, "_drop_reason", [("if members is not None and tk not in members:", "if False:")])


def _task_inputs_next_session(p: Patcher) -> None:
    from finrag_dagster.core.evaluation import experience as task_io

    # the window of task day T is T-3 .. T+1: news and anchors public after close(T) reach T's scores
    rewrite(p, task_io, "task_inputs", [("range(max(0, i - WINDOW + 1), i + 1)", "range(max(0, i - WINDOW + 2), i + 2)")])


def _member_before_start(p: Patcher) -> None:
    from finrag_dagster.core import anchors

    rewrite(p, anchors, "members_on", [('(pl.col("start") <= day)', '(pl.col("start") <= day + dt.timedelta(days=1))')])


def _member_after_end(p: Patcher) -> None:
    from finrag_dagster.core import anchors

    rewrite(p, anchors, "members_on", [('(pl.col("end") >= day)', '(pl.col("end") >= day - dt.timedelta(days=1))')])


def _selection_on_last_validation_day(p: Patcher) -> None:
    from finrag_dagster.core import loop_io

    rewrite(p, loop_io, "test_split_params", [("chosen if d >= test[0] else base", "chosen if d >= cal.offset(test[0], -1).isoformat() else base")])


def _split_starts_early(p: Patcher) -> None:
    from finrag_dagster.core import splits

    rewrite(p, splits, "split_bounds", [("out.append((days[0].isoformat(),", "out.append((cal.offset(days[0], -1).isoformat(),")])


def _split_ends_late(p: Patcher) -> None:
    from finrag_dagster.core import splits

    rewrite(p, splits, "split_bounds", [("days[-1].isoformat()))", "cal.offset(days[-1], 1).isoformat()))")])


def _memory_reset_late(p: Patcher) -> None:
    from finrag_dagster.core import splits

    rewrite(p, splits, "split_start_of", [("if a <= day <= b:", "if a < day <= b:")])


def _lora_last_validation_day(p: Patcher) -> None:
    from finrag_dagster.core import splits

    rewrite(p, splits, "lora_first_day", [('return b["test"][0]', 'return cal.offset(b["test"][0], -1).isoformat()')])


def _lora_label_on_cutoff(p: Patcher) -> None:
    from finrag_dagster.core.reader import lora

    rewrite(p, lora, "select_training_labels", [('(pl.col("maturity_day") < cutoff)', '(pl.col("maturity_day") <= cutoff)')])


def _class_weights_label_on_start(p: Patcher) -> None:
    from finrag_dagster.core import loop_io

    rewrite(
        p,
        loop_io,
        "weights_for",
        [('pl.col("maturity_day") < dt.date.fromisoformat(start)', 'pl.col("maturity_day") <= dt.date.fromisoformat(start)')],
    )


def _table6_label_on_test_start(p: Patcher) -> None:
    from finrag_dagster.core.evaluation import sensitivity

    rewrite(p, sensitivity, "table6", [('pl.col("maturity_day") < test_start', 'pl.col("maturity_day") <= test_start')])


def _tree_induced_with_its_own_day(p: Patcher) -> None:
    from finrag_dagster.core import splits

    rewrite(p, splits, "train_days_before", [("if d.isoformat() < day]", "if d.isoformat() <= day]")])


def _tree_induced_after_calendar_end(p: Patcher) -> None:
    from finrag_dagster.core import splits

    rewrite(p, splits, "induction_day", [("min(b, s.calendar.end)", "min(b, cal.offset(s.calendar.end, 1))")])


def _label_before_its_close(p: Patcher) -> None:
    from finrag_dagster.core import labels

    rewrite(p, labels, "_label_status", [("if i + h > pn.last_market:", "if i + h > pn.last_market + 1:")])


def _ingest_before_close(p: Patcher) -> None:
    from finrag_dagster.defs import sensors

    rewrite(
        p,
        sensors,
        "build_new_market_data_sensor",
        [("cal.close_time(cal.decision_day(today)) <= today", "cal.close_time(cal.decision_day(today)) <= today + dt.timedelta(hours=1)")],
    )


def _matured_request_early(p: Patcher) -> None:
    from finrag_dagster.defs import sensors

    rewrite(p, sensors, "matured_decision_days", [("maturing_on(cal, m, first_day)", "maturing_on(cal, cal.next_session(m), first_day)")])


def _decisions_before_first_day(p: Patcher) -> None:
    from finrag_dagster.defs import sensors

    rewrite(p, sensors, "decision_range", [("a = max(a, first_decision_day)", "a = max(a, nyse().offset(first_decision_day, -1).isoformat())")])


def _decisions_after_calendar_end(p: Patcher) -> None:
    from finrag_dagster.defs import sensors

    rewrite(p, sensors, "decision_range", [("b = min(b, last_day)", "b = min(b, nyse().offset(last_day, 1).isoformat())")])


U = "tests/unit/"
LEAKS: dict[str, Leak] = {
    "feedback_matured_on_decision_day": Leak(
        _feedback_on_decision_day,
        [U + "test_pit_loop.py::test_memory_of_day_d_holds_exactly_the_feedback_matured_by_d_minus_1"],
        "core/loop.py matured_on/toe_matured_on: day D's memory and tree take the feedback that matured on D, not D-1",
    ),
    "toe_feedback_matured_on_decision_day": Leak(
        _toe_feedback_on_decision_day,
        [U + "test_pit_loop.py::test_toe_tree_of_day_d_is_updated_only_by_labels_matured_on_d_minus_1"],
        "core/loop.py toe_matured_on only: the experience tree of day D takes the eq. 13 updates of labels matured on D",
    ),
    "feedback_label_matures_a_session_early": Leak(
        _feedback_cutoff_inclusive_of_decision_day,
        [U + "test_pit_feedback.py::test_an_ok_label_maturing_after_the_cut_off_gives_no_feedback"],
        "core/memory/feedback.py build_feedback: a label maturing the day after the feedback cut-off already counts",
    ),
    "portfolio_earns_decision_day_return": Leak(
        _portfolio_same_day,
        [U + "test_evaluation.py::test_three_day_overlap_and_turnover_by_hand"],
        "core/evaluation/portfolio.py strategy_targets: w_t includes the sleeve decided at close(t), so it earns close(t-1)->close(t)",
    ),
    "experience_task_releases_on_maturity_day": Leak(
        _experience_task_release_on_maturity,
        [U + "test_experience_task.py::test_harness_releases_outcomes_only_the_day_after_maturity"],
        "core/experience/task.py run_task: an outcome (T0, h) reaches the memories on its maturity day T0+h, not T0+h+1",
    ),
    "experience_task_alpha_matures_a_session_early": Leak(
        _task_alpha_matures_early,
        [U + "test_experience_task.py::test_sector_excess_returns_by_hand"],
        "core/experience/task.py excess_returns: the outcome of (T, h) is stamped as maturing on T+h-1, so it is released on T+h",
    ),
    "bm25_stats_over_whole_store": Leak(
        _bm25_whole_store,
        [U + "test_retrieval_pool.py::test_bm25_scores_equal_rank_bm25_on_the_visible_prefix"],
        "core/retrieval/lexical.py PrefixStats.advance: BM25 N, df and avgdl over the whole store instead of the prefix [0, n)",
    ),
    "dense_minmax_over_whole_store": Leak(
        _dense_minmax_whole_store,
        [U + "test_pit_retrieval.py::test_relevance_is_min_max_normalised_within_the_pool_only"],
        "core/retrieval/pool.py: the pool's dense cosine min-max normalised with the bounds of the whole store (future passages too)",
    ),
    "pool_sees_passages_at_decision_time": Leak(
        _pool_sees_decision_time,
        [U + "test_retrieval_pool.py::test_filter_first_and_every_removal_rule"],
        "core/retrieval/pool.py Store.prefix_end: passages with public_time == decision_time become visible (<= instead of <)",
    ),
    "class_weights_from_current_split": Leak(
        _class_weights_current_split,
        [U + "test_pit_weights.py::test_class_weights_come_from_the_previous_split_matured_before_the_start"],
        "core/loop_io.py weights_for: pi_y from the labels of the split being evaluated instead of the previous split",
    ),
    "class_weights_include_unmatured_labels": Leak(
        _class_weights_unmatured,
        [U + "test_pit_weights.py::test_class_weights_come_from_the_previous_split_matured_before_the_start"],
        "core/loop_io.py weights_for: the previous split's labels that mature on/after the split start are counted",
    ),
    "table6_scored_with_labels_matured_in_test": Leak(
        _table6_labels_matured_in_test,
        [U + "test_pit_sensitivity.py::test_table6_scores_validation_days_with_labels_matured_before_the_test_split"],
        "core/evaluation/sensitivity.py table6: Table 6 scored with validation labels that only mature inside the test split",
    ),
    "table6_selected_on_test_split": Leak(
        _table6_on_test_split,
        [U + "test_pit_sensitivity.py::test_table6_scores_validation_days_with_labels_matured_before_the_test_split"],
        "core/evaluation/sensitivity.py table6: Table 6 (the lambda/delta selection) run and scored on the test split's days",
    ),
    "table6_cut_at_first_materialised_test_day": Leak(
        _table6_cut_at_first_materialised_test_day,
        [U + "test_pit_sensitivity.py::test_table6_cut_is_the_test_split_start_even_before_its_first_anchors_exist"],
        "core/evaluation/sensitivity.py table6: labels cut at the first test day whose anchors exist, not the split's first session",
    ),
    "label_window_reaches_d_minus_19": Leak(
        _label_window_to_d19,
        [U + "test_labels.py::test_vectorised_labels_equal_per_window_ols"],
        "core/labels.py compute_labels: the market-model estimation window ends on D-19 instead of D-20",
    ),
    "label_maturity_a_session_early": Leak(
        _label_maturity_early,
        [U + "test_pit_labels.py::test_a_label_matures_on_the_session_of_close_d_plus_h"],
        "core/labels.py compute_labels: maturity_day = D+h-1, so the loop feeds a label back on the day close(D+h) is printed",
    ),
    "date_only_stamp_at_midnight_utc": Leak(
        _date_only_midnight_utc,
        [U + "test_loaders_news.py::test_dates_only_treats_every_stamp_as_a_date"],
        "core/calendar.py date_only_public_ns (used by sources/news/clock.py, replay.py): a date-only stamp read as 00:00 UTC",
    ),
    "edgar_filing_date_not_acceptance": Leak(
        _edgar_filing_date,
        [U + "test_loaders_edgar.py::test_latest_acceptance_time_wins"],
        "sources/edgar/loader.py _accepted_frame: a filing's public_time is its filing date at 00:00 UTC instead of the acceptance datetime",
    ),
    "edgar_acceptance_contradicts_filing_date": Leak(
        _edgar_acceptance_unchecked,
        [U + "test_edgar_trust.py::test_an_acceptance_time_that_contradicts_its_filing_date_is_quarantined"],
        "sources/edgar/merge.py _merge_groups: an acceptance time weeks before (or after) the record's own filing date is taken as the public time",
    ),
    "after_close_news_decided_same_day": Leak(
        _after_close_same_day,
        [U + "test_calendar.py::test_after_close_news_moves_to_the_next_session"],
        "core/calendar.py decision_days: news up to 6 h after the close is decided on that day (seen by its own close)",
    ),
    "dedup_cluster_named_by_later_passage": Leak(
        _dedup_reverse_time,
        [U + "test_dedup_cards_anchors.py::test_rewording_joins_the_earliest_cluster_and_unrelated_text_does_not"],
        "core/dedup.py ClusterIndex.assign: a day's passages clustered latest first, so an earlier passage joins a later one's cluster",
    ),
    "returns_model_reads_next_close": Leak(
        _returns_read_next_close,
        [U + "test_sqlmodels.py::test_returns_model_is_backward_looking_and_skips_gaps"],
        "finrag_dagster/dbt_like_sql/returns.sql: ret_1d of day D (the context card's 'prior 1D') uses close(D+1)",
    ),
    "search_as_of_includes_later_hour": Leak(
        _search_as_of_inclusive,
        [U + "test_pit_search.py::test_search_index_holds_exactly_the_passages_public_before_as_of"],
        "core/retrieval/search.py SearchIndex: passages public up to an hour after as_of are searchable",
    ),
    "minute_stamp_read_at_start_of_minute": Leak(
        _minute_stamp_at_start,
        [U + "test_news_clock.py::test_minute_precision_stands_for_the_end_of_the_minute"],
        "sources/news/clock.py news_public_ns: a whole-minute stamp is public at its start, so 16:00 earns the close it could not trade",
    ),
    "fnspid_clock_trusted_by_default": Leak(
        _fnspid_clock_trusted,
        [
            U + "test_news_clock.py::test_fnspid_default_reads_every_stamp_as_a_date",
            U + "test_news_clock.py::test_wrong_way_offset_after_close_news_is_not_same_day",
        ],
        "sources/news/load.py, registry.py: FNSPID's wrong-way time of day trusted by default (after-close news decided the same day)",
    ),
    "local_midnight_with_offset_read_as_time": Leak(
        _local_midnight_timed,
        [U + "test_news_clock.py::test_local_midnight_with_an_offset_is_a_date"],
        "sources/news/clock.py _clock_parts: '00:00-05:00' (a date) read as 05:00 UTC, pre-market news of that day",
    ),
    "edgar_unequal_arrays_zipped": Leak(
        _edgar_arrays_zipped,
        [U + "test_edgar_trust.py::test_unequal_arrays_quarantine_the_file_never_zip_it"],
        "sources/edgar/submissions.py read_submissions_json: a one-short acceptanceDateTime array zipped, lending filings their neighbours' times",
    ),
    "edgar_date_only_acceptance_at_utc_midnight": Leak(
        _edgar_date_only_at_midnight,
        [U + "test_edgar_bad_inputs.py::test_a_date_only_acceptance_is_public_at_the_end_of_its_day_and_flagged"],
        "sources/edgar/records.py _acceptance_ns: an acceptanceDateTime given as a date only is read as 00:00 UTC, so a filing of that evening is decided that session",
    ),
    "edgar_duplicate_accession_keeps_the_earlier_time": Leak(
        _edgar_duplicate_keeps_earlier,
        [U + "test_edgar_bad_inputs.py::test_an_accession_listed_twice_keeps_the_later_time_and_quarantines_the_other"],
        "sources/edgar/merge.py _json_duplicates: of one accession listed twice in a submissions JSON, the earlier acceptance time is kept",
    ),
    "anchors_dedup_window_of_the_range": Leak(
        _anchors_range_window,
        [U + "test_batching.py::test_a_cluster_root_older_than_the_day_s_look_back_does_not_decide_its_anchors"],
        "core/anchors.py anchors_for_days: a day's near-duplicate rule reads the whole range's clusters (a range run differs from day by day)",
    ),
    "universe_members_ignored": Leak(
        _non_members_anchored,
        [U + "test_membership.py::test_anchors_only_for_members_on_the_decision_day"],
        "core/anchors.py build_anchors: tickers outside the universe on their decision day get anchors (survivorship)",
    ),
    "experience_tree_induced_through_validation": Leak(
        _tree_induced_on_validation,
        [U + "test_pit_experience.py::test_tree_is_induced_on_the_last_train_session_from_train_days_only"],
        "core/splits.py induction_day/train_days_before: the prior tree is induced at the end of the validation split from train and validation anchors",
    ),
    "fiscal_calendar_from_a_later_filing": Leak(
        _fiscal_calendar_later_10k,
        [U + "test_fiscal.py::test_the_calendar_is_what_was_known_at_as_of"],
        "core/retrieval/fiscal.py calendars: a query's fiscal calendar (year end, quarter ends) read from filings accepted after its as-of time",
    ),
    "results_release_after_as_of": Leak(
        _results_release_after_as_of,
        [U + "test_search.py::test_an_earnings_query_is_about_the_results_release_after_its_period"],
        "core/retrieval/engine.py release_dates: an earnings query's results release taken from 8-K Item 2.02 filings accepted after its as-of time",
    ),
    "experience_content_read_after_its_day": Leak(
        _tree_content_after_d,
        [U + "test_pit_experience.py::test_the_tree_of_d_never_reads_content_that_appeared_after_d"],
        "core/experience/store.py content_versions, tree.py latest_content: the tree of D joins content versions dated after D",
    ),
    "experience_task_reads_the_next_session": Leak(
        _task_inputs_next_session,
        [U + "test_pit_experience_task.py::test_a_task_day_reads_the_news_and_anchors_of_t_minus_4_through_t_only"],
        "core/evaluation/experience.py task_inputs: the news window of task day T is T-3..T+1, so news public after close(T) scores T",
    ),
    "member_a_day_before_its_start": Leak(
        _member_before_start,
        [U + "test_membership.py::test_membership_intervals_are_inclusive_at_both_ends"],
        "core/anchors.py members_on: a ticker is a universe member the day before its membership start",
    ),
    "member_a_day_after_its_end": Leak(
        _member_after_end,
        [U + "test_membership.py::test_membership_intervals_are_inclusive_at_both_ends"],
        "core/anchors.py members_on: a ticker is still a universe member the day after its membership end",
    ),
    "table6_selection_used_on_the_last_validation_day": Leak(
        _selection_on_last_validation_day,
        [U + "test_splits_boundaries.py::test_the_table6_selection_is_used_from_the_first_test_session_and_never_on_a_validation_day"],
        "core/loop_io.py test_split_params: the lambda/delta chosen on validation labels is used from the last validation day, not the first test session",
    ),
    "split_starts_a_session_early": Leak(
        _split_starts_early,
        [U + "test_splits_boundaries.py::test_split_bounds_are_the_first_and_last_session_inside_each_split"],
        "core/splits.py split_bounds: each split starts one session before its first session (the test split on the last validation day)",
    ),
    "split_ends_a_session_late": Leak(
        _split_ends_late,
        [U + "test_splits_boundaries.py::test_split_bounds_are_the_first_and_last_session_inside_each_split"],
        "core/splits.py split_bounds: each split ends one session after its last session (the validation split takes the first test day)",
    ),
    "memory_reset_a_session_late": Leak(
        _memory_reset_late,
        [U + "test_splits_boundaries.py::test_the_memory_resets_on_the_first_session_of_each_split"],
        "core/splits.py split_start_of: a split's first session is not in its split, so its memory does not reset there",
    ),
    "lora_reads_the_last_validation_day": Leak(
        _lora_last_validation_day,
        [U + "test_splits_boundaries.py::test_lora_variants_read_from_the_first_test_session_exactly"],
        "core/splits.py lora_first_day: a LoRA variant (chosen on validation labels) reads from the last validation day",
    ),
    "lora_train_label_maturing_on_the_cutoff": Leak(
        _lora_label_on_cutoff,
        [U + "test_lora.py::test_training_labels_matured_before_validation_start_only"],
        "core/reader/lora.py select_training_labels: a label maturing on the next split's first day is trained on (<= instead of <)",
    ),
    "class_weights_count_a_label_maturing_on_the_split_start": Leak(
        _class_weights_label_on_start,
        [U + "test_pit_weights.py::test_class_weights_come_from_the_previous_split_matured_before_the_start"],
        "core/loop_io.py weights_for: a previous-split label maturing on the split start counts towards pi_y (<= instead of <)",
    ),
    "table6_counts_a_label_maturing_on_the_test_start": Leak(
        _table6_label_on_test_start,
        [U + "test_pit_sensitivity.py::test_table6_scores_validation_days_with_labels_matured_before_the_test_split"],
        "core/evaluation/sensitivity.py table6: a validation label maturing on the test split's first session scores Table 6 (<= instead of <)",
    ),
    "experience_tree_induced_with_its_own_day": Leak(
        _tree_induced_with_its_own_day,
        [U + "test_pit_experience.py::test_tree_is_induced_on_the_last_train_session_from_train_days_only"],
        "core/splits.py train_days_before: the tree asked for on day D is induced from D's own anchors too (<= instead of <)",
    ),
    "experience_tree_induced_after_calendar_end": Leak(
        _tree_induced_after_calendar_end,
        [U + "test_pit_experience.py::test_tree_is_induced_on_the_last_train_session_from_train_days_only"],
        "core/splits.py induction_day: with calendar.end inside the train split the tree is induced on the session after calendar.end",
    ),
    "label_computed_a_session_before_its_close": Leak(
        _label_before_its_close,
        [U + "test_pit_labels.py::test_a_label_matures_on_the_session_of_close_d_plus_h"],
        "core/labels.py compute_labels: a label whose close(D+h) is the next session is computed now (missing_price), not pending",
    ),
    "ingest_a_session_before_its_close": Leak(
        _ingest_before_close,
        [U + "test_sensors.py::test_new_market_data_follows_the_replay_clock_of_a_landing_folder"],
        "defs/sensors.py new_market_data: a session counts as complete an hour before its close, so its partitions are ingested early",
    ),
    "matured_feedback_requested_a_session_early": Leak(
        _matured_request_early,
        [U + "test_sensors.py::test_matured_days_respect_the_first_decision_day"],
        "defs/sensors.py matured_decision_days: the close of day m is taken to mature the labels of m-h+1 (a session early)",
    ),
    "decisions_start_a_session_before_decision_start": Leak(
        _decisions_before_first_day,
        [U + "test_pit_calendar_bounds.py::test_the_decision_range_is_clipped_to_the_first_and_last_decision_session"],
        "defs/sensors.py decision_range: the decision job also runs the history session before the first decision day",
    ),
    "decisions_run_a_session_after_calendar_end": Leak(
        _decisions_after_calendar_end,
        [U + "test_pit_calendar_bounds.py::test_the_decision_range_is_clipped_to_the_first_and_last_decision_session"],
        "defs/sensors.py decision_range: the decision job also runs the session after calendar.end",
    ),
    "minute_only_stamp_read_at_start_in_a_second_source": Leak(
        _minute_only_stamp_at_its_start,
        [U + "test_news_clock_by_hand.py::test_a_stamp_without_seconds_stands_for_its_minute_in_a_second_precise_source"],
        "sources/news/clock.py news_public_ns: in a source that writes seconds, a stamp without them (16:00-05:00) is public at 16:00:00, though it may be 16:00:30",
    ),
}


def catcher_sets(fast_only: bool = True) -> list[tuple[str, ...]]:
    """The distinct catcher sets, in registry order."""
    out: list[tuple[str, ...]] = []
    for leak in LEAKS.values():
        key = tuple(leak.catchers)
        if (not fast_only or not leak.slow) and key not in out:
            out.append(key)
    return out
