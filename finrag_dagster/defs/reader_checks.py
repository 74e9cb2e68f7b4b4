"""Blocking checks on what a family's reader wrote, before anything of the same run reads it.

Three checks on ``<family>/reader_outputs``, computed from what the run wrote (every variant of the
family: the tallies the loop counts as it writes, core/loop_io.py ``answer_tally``), with thresholds in ``[checks]`` (core/settings.py CheckSettings):

* ``answers_parse``: per day, the share of answers (anchor x horizon) that parsed against the
  reader's JSON schema;
* ``citations_in_context``: per day, the share of cited ids that are passages of the anchor's
  context (a day that cites nothing has nothing wrong to cite);
* ``signal_mix``: over the run, the most frequent signal's share of the parsed answers (judged
  from ``min_answers_for_mix`` answers on: one day of a small universe may well be all neutral).

They are ``blocking``: a failed one fails the loop's step after its outputs are recorded, so the
family's feedback and the stock-day signals of that run do not materialise from a broken reader.
"""

from __future__ import annotations

import dagster as dg

from ..core.loop_io import SIGNALS, answer_tally
from ..core.settings import CheckSettings
from ..core.storage.lake import Lake

CHECKS = {
    "answers_parse": "per day, the share of answers that parsed against the reader's schema is at least checks.min_valid_json_share",
    "citations_in_context": "per day, the share of cited ids that are in the anchor's context is at least checks.min_cited_in_context_share",
    "signal_mix": "over the run, no signal is more than checks.max_signal_share of the parsed answers (judged from checks.min_answers_for_mix answers)",
}


def reader_check_specs(key: dg.AssetKey) -> list[dg.AssetCheckSpec]:
    """The blocking checks of a family's reader outputs."""
    return [dg.AssetCheckSpec(name, asset=key, description=desc, blocking=True) for name, desc in CHECKS.items()]


def tallies_from_lake(lake: Lake, variants: list[str], days: list[str]) -> dict[str, dict[str, int]]:
    """The :func:`~finrag_dagster.core.loop_io.answer_tally` of each day's written reader outputs,
    summed over ``variants`` (what a loop step counts as it writes; this reads them back)."""
    out: dict[str, dict[str, int]] = {}
    for v in variants:
        frame = lake.read("reader_outputs", dates=days, columns=["signal", "cited_ids", "valid_ids", "valid_json"], variant=v)
        for (day,), rows in frame.group_by(["date"]):
            mine = out.setdefault(str(day), {})
            for k, n in answer_tally(rows).items():
                mine[k] = mine.get(k, 0) + n
    return out


def _share(num: int, den: int) -> float:
    return num / den if den else 1.0  # nothing to judge: nothing wrong


def _failing(shares: dict[str, float], least: float) -> list[str]:
    return [f"{d} ({v:.3f})" for d, v in sorted(shares.items()) if v < least]


def reader_check_results(key: dg.AssetKey, tallies: dict[str, dict[str, int]], c: CheckSettings) -> list[dg.AssetCheckResult]:
    """The three checks over a run's answer tallies (decision day -> answer_tally, every variant)."""
    parsed = {d: _share(t["parsed"], t["answers"]) for d, t in tallies.items()}
    in_context = {d: _share(t["cited_in_context"], t["cited"]) for d, t in tallies.items()}
    bad_parse, bad_cite = _failing(parsed, c.min_valid_json_share), _failing(in_context, c.min_cited_in_context_share)
    mix = {f"{s:+d}": sum(t[f"signal_{s:+d}"] for t in tallies.values()) for s in SIGNALS}
    n_parsed = sum(mix.values())
    top = max(mix.values()) / n_parsed if n_parsed else 0.0
    judged = n_parsed >= c.min_answers_for_mix
    common = {"days_checked": len(tallies), "answers": sum(t["answers"] for t in tallies.values())}
    return [
        dg.AssetCheckResult(
            check_name="answers_parse",
            asset_key=key,
            passed=not bad_parse,
            metadata={**common, "lowest_share": min(parsed.values(), default=1.0), "failing_days": ", ".join(bad_parse[:10]) or "none"},
        ),
        dg.AssetCheckResult(
            check_name="citations_in_context",
            asset_key=key,
            passed=not bad_cite,
            metadata={**common, "lowest_share": min(in_context.values(), default=1.0), "failing_days": ", ".join(bad_cite[:10]) or "none"},
        ),
        dg.AssetCheckResult(
            check_name="signal_mix",
            asset_key=key,
            passed=not judged or top <= c.max_signal_share,
            metadata={**common, "parsed_answers": n_parsed, "top_signal_share": round(top, 4), "mix": dg.MetadataValue.json(mix), "judged": judged},
        ),
    ]
