"""`finrag demo` against a previous implementation, in the same run: stage by stage, wall and CPU.

    .venv/bin/python benchmarks/demo_ab.py --baseline fee4e52 --config configs/demo.toml
    .venv/bin/python benchmarks/demo_ab.py --baseline fee4e52 --end 2019-03-29 --repeat 2

The baseline is any git revision of this repository: it is checked out into a temporary worktree
and run with this checkout's virtualenv, each tree with its own shipped Dagster instance settings
(``.dagster_home/dagster.yaml``, copied into a fresh DAGSTER_HOME), with its own version of the
settings file when it is one of the repository's (``configs/demo.toml``), into its own fresh lake. The
two run one after the other (alternating when ``--repeat`` > 1), so a machine that is slower for a
while slows both. Printed per stage: wall seconds (from the demo's own stage table), and for the whole
run the CPU seconds of the demo and of every process it started; the ratio is baseline / current.
The loop's cost per anchor and variant is the loop stage's wall time divided by the anchors decided
times the variants read. With ``--diff`` the two lakes are compared file by file
(``scripts/lake_diff.py``): a speed-up must not change an output byte.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = re.compile(r"│\s*(\w+)\s*│\s*(\d+)\s*│")


def run_demo(tree: Path, work: Path, config: Path, end: str | None) -> dict:
    """One `finrag demo` of ``tree`` (its code, its instance settings) into ``work``."""
    home = work / "home"
    home.mkdir(parents=True)
    shutil.copy(tree / ".dagster_home" / "dagster.yaml", home / "dagster.yaml")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("FINRAG_CONFIG", "FINRAG_LAKE", "PYTHONPATH")},
        "PYTHONPATH": str(tree),
        "DAGSTER_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    if config.is_relative_to(ROOT):  # a settings file of the repository: each tree runs its own version of it
        config = tree / config.relative_to(ROOT)
    cmd = [sys.executable, "-m", "finrag_dagster.cli", "demo", "--config", str(config), "--lake", str(work / "lake")]
    if end:
        cmd += ["--end", end]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit(f"{tree}: finrag demo failed\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    timings = out.stdout.split("stage timings", 1)[-1].split("done in", 1)[0]  # not the summary's tables below it
    stages = {m.group(1): float(m.group(2)) for m in STAGE.finditer(timings)}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "stages": stages, "lake": str(work / "lake")}


def loop_units(lake: str) -> int:
    """Anchors decided x variants read (the loop's unit of work) in a lake."""
    sys.path.insert(0, str(ROOT))
    from finrag_dagster.core.tables import Lake

    con = Lake(lake).duckdb()
    return int(con.execute("SELECT count(*) FROM (SELECT DISTINCT variant, anchor_id FROM reader_outputs)").fetchone()[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="git revision of the previous implementation")
    ap.add_argument("--config", default=str(ROOT / "configs" / "demo.toml"))
    ap.add_argument("--end", default=None, help="last decision day (default: the settings' calendar.end)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--diff", action="store_true", help="compare the two lakes file by file")
    ap.add_argument("--keep", default=None, help="keep the lakes under this folder")
    ap.add_argument("--out", default=None, help="write the measurements as JSON here")
    a = ap.parse_args()
    config = Path(a.config).resolve()
    tmp = Path(a.keep or tempfile.mkdtemp(prefix="finrag-ab-"))
    base_tree = tmp / "baseline_tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(base_tree), a.baseline], check=True, capture_output=True)
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    trees = {f"baseline {a.baseline}": base_tree, f"current {rev}" + (" +changes" if _dirty() else ""): ROOT}
    runs: dict[str, list[dict]] = {k: [] for k in trees}
    try:
        for i in range(a.repeat):
            order = list(trees.items()) if i % 2 == 0 else list(reversed(trees.items()))
            for name, tree in order:
                work = tmp / f"{name.split()[0]}_{i}"
                print(f"[{time.strftime('%H:%M:%S')}] {name}: finrag demo (repeat {i + 1})", flush=True)
                runs[name].append(run_demo(tree, work, config, a.end))
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base_tree)], capture_output=True)
    (bname, b), (cname, c) = list(runs.items())

    def med(xs: list[float]) -> float:
        xs = sorted(xs)
        return xs[len(xs) // 2]

    stages = list(c[0]["stages"])
    print(f"\n{'stage':12s} {bname:>22s} {cname:>22s} {'ratio':>7s}")
    for st in stages:
        bv, cv = med([r["stages"].get(st, 0) for r in b]), med([r["stages"].get(st, 0) for r in c])
        print(f"{st:12s} {bv:20.0f} s {cv:20.0f} s {bv / cv if cv else float('nan'):6.2f}x")
    for what in ("wall", "cpu"):
        bv, cv = med([r[what] for r in b]), med([r[what] for r in c])
        print(f"{'total ' + what:12s} {bv:20.0f} s {cv:20.0f} s {bv / cv:6.2f}x")
    units = loop_units(c[0]["lake"])
    bl, cl = med([r["stages"].get("loop", 0) for r in b]), med([r["stages"].get("loop", 0) for r in c])
    print(f"loop per anchor and variant ({units:,} units): {bl / units * 1000:.2f} ms -> {cl / units * 1000:.2f} ms ({bl / cl:.2f}x)")
    if a.diff:
        d = subprocess.run([sys.executable, str(ROOT / "scripts" / "lake_diff.py"), b[0]["lake"], c[0]["lake"]], capture_output=True, text=True)
        print(d.stdout.strip().splitlines()[-1] if d.stdout.strip() else d.stderr[-500:])
    if a.out:
        Path(a.out).write_text(json.dumps(runs, indent=1))
    if not a.keep:
        shutil.rmtree(tmp, ignore_errors=True)


def _dirty() -> bool:
    return bool(
        subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True).stdout.strip()
    )


if __name__ == "__main__":
    main()
