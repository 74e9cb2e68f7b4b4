"""Checks a compiled reader library in a child process before the pipeline loads it.

llama-cpp-python is compiled on the machine that installs it; a build tuned for another CPU (or a
native build the compiler got wrong, as on some AVX-512/AMX machines) dies with SIGSEGV or SIGILL
on the first prompt of several tokens. Loaded in the pipeline's own process that is a dead run
process with no word; behind ``python -m llama_cpp.server`` it is a server that vanishes while its
client waits. So the build answers a short multi-token prompt once, in a child, first: if the child
dies, the run stops with one paragraph that names the package, says its build crashes on this CPU
and gives the command that rebuilds it portably (docs/reader.md, "A portable llama.cpp build").
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

# the child: load the GGUF, answer a chat prompt of several tokens under a JSON grammar (the path
# the backend takes), print one JSON line. argv[1] is the model path.
LLAMA_PROBE = r"""
import json, sys
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=512, n_threads=1, seed=0, verbose=False)
out = llm.create_chat_completion(
    messages=[{"role": "user", "content": "Reply with a JSON object that gives the signal for a stock after good earnings news."}],
    response_format={"type": "json_object"}, temperature=0.0, top_k=1, max_tokens=8, seed=0)
print(json.dumps({"ok": True, "tokens": out["usage"]["prompt_tokens"]}))
"""

PROBE_TIMEOUT_S = 180.0
_checked: dict[tuple, None] = {}


class NativeBuildError(RuntimeError):
    """A compiled dependency crashes on this machine's CPU (its child check died)."""


def llama_rebuild_command(version: str) -> str:
    """The command that rebuilds llama-cpp-python for the portable x86-64-v3 baseline."""
    return (
        'CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" pip install --force-reinstall --no-deps '
        f"--no-cache-dir --no-binary llama_cpp_python llama_cpp_python=={version}"
        " (in a checkout: scripts/build_llama_cpp.sh .venv/bin/pip)"
    )


def describe_exit(returncode: int) -> str:
    """'killed by SIGSEGV' for a negative return code, 'exited with status N' otherwise."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with status {returncode}"


def one_line(text: str, n: int = 300) -> str:
    """The end of a child's output as one line (a paragraph, not a traceback)."""
    return " ".join(text.split())[-n:]


def crash_paragraph(package: str, version: str, outcome: str, rebuild: str, tail: str = "") -> str:
    """The one paragraph a run stops with when a native build fails its child check."""
    said = f" Its last output: {one_line(tail)}." if tail.strip() else ""
    return (
        f"{package} {version} is installed, but its native build crashes on this CPU: a child process "
        f"that loaded a model and answered a short multi-token prompt {outcome}.{said} It was probably "
        "compiled for another processor (or natively, for instruction sets this build gets wrong), so the "
        f"pipeline did not load it. Rebuild it for a portable baseline: {rebuild}"
    )


def _stamp(package_dir: Path, model: str) -> str:
    """What a passed check holds for: the interpreter, the library files, the model file, the CPU."""
    h = hashlib.sha256(sys.executable.encode())
    for p in sorted(package_dir.rglob("*.so*")) + [Path(model)]:
        st = p.stat()
        h.update(f"{p}:{st.st_size}:{st.st_mtime_ns}".encode())
    try:
        cpu = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith(("flags", "Features"))][:1]
    except OSError:
        cpu = []
    h.update(json.dumps(cpu).encode())
    return h.hexdigest()[:24]


def run_probe(code: str, args: list[str], timeout_s: float | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a child Python (this interpreter); a hang past ``timeout_s`` counts as a crash."""
    timeout_s = PROBE_TIMEOUT_S if timeout_s is None else timeout_s
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    try:
        return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return subprocess.CompletedProcess(e.cmd, -int(signal.SIGKILL), out, f"no answer within {timeout_s:.0f} s")


def check_native_build(package: str, version: str, probe: tuple[str, list[str]], rebuild: str, cache_key: str = "") -> None:
    """Run ``probe`` (code, argv) in a child once; raise NativeBuildError with the crash paragraph if it dies."""
    key = (package, version, probe[0], tuple(probe[1]), cache_key)
    if key in _checked:
        return
    done = _marker_dir() / f"{package}-{cache_key}.ok" if cache_key else None
    if done is not None and done.exists():
        _checked[key] = None
        return
    res = run_probe(*probe)
    tail = (res.stderr or "") + (res.stdout or "")
    if res.returncode < 0:  # killed by a signal (SIGSEGV, SIGILL, SIGABRT…) or hung
        raise NativeBuildError(crash_paragraph(package, version, describe_exit(res.returncode), rebuild, tail))
    if res.returncode != 0:  # a Python error in the child: not a crash, say what it printed
        raise NativeBuildError(f"{package} {version} failed its check in a child process ({describe_exit(res.returncode)}): {one_line(tail, 600)}")
    _checked[key] = None
    if done is not None:
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text(res.stdout)


def _marker_dir() -> Path:
    return Path(os.environ.get("FINRAG_CACHE_DIR", Path.home() / ".cache" / "finrag")) / "native_checks"


def check_llama_cpp(model: str) -> None:
    """llama-cpp-python answers a multi-token prompt of ``model`` in a child (once per build, CPU and model)."""
    import importlib.metadata
    import importlib.util

    version = importlib.metadata.version("llama_cpp_python")
    spec = importlib.util.find_spec("llama_cpp")
    pkg_dir = Path(list(spec.submodule_search_locations)[0])
    check_native_build("llama-cpp-python", version, (LLAMA_PROBE, [model]), llama_rebuild_command(version), cache_key=_stamp(pkg_dir, model))
