"""The five-year benchmark runs year by year and resumes: its plan must order the phases as the
pipeline needs them (benchmarks/scale.py ``chunk_plan``) and skip what its progress file records."""

import datetime as dt
import importlib.util
import json
from pathlib import Path

import pytest

from finrag_dagster.core.calendar import nyse
from finrag_dagster.core.settings import HORIZONS, Settings

ROOT = Path(__file__).resolve().parents[2]


def _scale():
    spec = importlib.util.spec_from_file_location("scale_bench", ROOT / "benchmarks" / "scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _settings(tmp_path) -> Settings:
    return Settings().with_overrides(
        lake_dir=str(tmp_path / "lake"),
        calendar={"start": dt.date(2018, 10, 1), "end": dt.date(2021, 3, 31), "decision_start": dt.date(2019, 1, 2)},
        splits={
            "train": (dt.date(2019, 1, 1), dt.date(2019, 12, 31)),
            "validation": (dt.date(2020, 1, 1), dt.date(2020, 12, 31)),
            "test": (dt.date(2021, 1, 1), dt.date(2021, 3, 31)),
        },
        variants={"families": ["no_memory", "source_memory"]},
    )


def test_plan_orders_the_phases_of_each_year(tmp_path):
    scale = _scale()
    s = _settings(tmp_path)
    plan = scale.chunk_plan(s)
    names = [(c, st) for c, (st,), _ in plan]
    assert names[0] == ("all", "sources") and names[-1] == ("all", "evaluation")
    assert [n for n in names if n[0] == "2019"] == [("2019", "history"), ("2019", "decisions"), ("2019", "loop")]
    # the Table 6 selection runs once, in the year that completes the validation split, before its loop
    assert [n for n in names if n[1] == "selection"] == [("2020", "selection")]
    y20 = [n[1] for n in names if n[0] == "2020"]
    assert y20 == ["history", "labels_matured", "decisions", "selection", "loop"]
    kw = {(c, st): k for c, (st,), k in plan}
    assert kw[("2019", "history")]["history_start"] == s.calendar.start  # the look-back comes with the first year
    assert kw[("2020", "history")]["history_start"] == dt.date(2020, 1, 2)
    # the previous year's last days get their matured labels and feedback, as the matured_feedback sensor asks
    lm = kw[("2021", "labels_matured")]
    tail = nyse().sessions_in_range(dt.date(2020, 12, 1), dt.date(2020, 12, 31))[-(max(HORIZONS) + 1) :]
    assert (lm["decision_start"], lm["end"]) == (tail[0], tail[-1])
    assert set(lm["only"]) == {"labels", "no_memory/feedback", "source_memory/feedback"}
    assert kw[("2021", "loop")]["end"] == dt.date(2021, 3, 31)


def test_a_recorded_phase_is_skipped_on_resume(tmp_path, monkeypatch):
    scale = _scale()
    s = _settings(tmp_path)
    progress = tmp_path / "progress.jsonl"
    plan = scale.chunk_plan(s)
    progress.write_text("".join(json.dumps({"chunk": c, "stage": st, "wall_s": 1.0, "cpu_s": 1.0, "peak_mib": 1}) + "\n" for c, (st,), _ in plan[:3]))
    ran = []

    def fake_run_range(settings, instance=None, **kw):
        ran.append(kw)
        return []

    monkeypatch.setattr(scale, "run_range", fake_run_range)
    stop = tmp_path / "STOP"
    assert scale.measure_chunked(s, progress, stop_file=stop, twin=False) is not None
    assert [k["only"] for k in ran] == [k["only"] for _, _, k in plan[3:]]
    done = scale._done(progress)
    assert set(done) == {(c, st) for c, (st,), _ in plan}
    # a stop file halts before the next phase and records nothing more
    progress.write_text("")
    stop.touch()
    ran.clear()
    assert scale.measure_chunked(s, progress, stop_file=stop, twin=False) is None
    assert ran == [] and not scale._done(progress)


def test_resume_refuses_other_settings(tmp_path, monkeypatch):
    scale = _scale()
    s = _settings(tmp_path)
    progress = tmp_path / "progress.jsonl"
    monkeypatch.setattr(scale, "run_range", lambda settings, instance=None, **kw: [])
    scale.check_resumable(s, progress)
    scale.check_resumable(s, progress)  # same settings: resumes
    assert progress.read_text().count("settings_digest") == 1
    other = s.with_overrides(world={"events_per_ticker_year": 50.0})
    with pytest.raises(SystemExit, match="other settings"):
        scale.check_resumable(other, progress)
