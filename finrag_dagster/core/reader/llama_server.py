"""``python -m llama_cpp.server`` on loopback for the ``openai`` reader, started only after its build passed.

The server loads the same native library as the ``llama_cpp`` backend; a build that crashes on this
CPU made it die without a word while its client waited for minutes. Here the build is checked in a
child first (``native_check``), and the wait for the server watches the process: if it exits, the
wait ends at once with how it died and the end of its log.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .native_check import NativeBuildError, check_llama_cpp, crash_paragraph, describe_exit, llama_rebuild_command, one_line


class ServerDied(RuntimeError):
    """The local model server exited before it answered."""


@dataclass(frozen=True)
class LlamaServerSpec:
    model: str  # a .gguf path
    port: int
    api_key: str = ""
    alias: str = "smollm2"
    n_ctx: int = 4096
    host: str = "127.0.0.1"

    def argv(self) -> list[str]:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", self.model, "--host", self.host, "--port", str(self.port)]
        cmd += ["--n_ctx", str(self.n_ctx), "--model_alias", self.alias]
        return cmd + (["--api_key", self.api_key] if self.api_key else [])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def _llama_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("llama_cpp_python")
    except PackageNotFoundError:
        return "(not installed)"


def _log_tail(log_path: Path, n: int = 1500) -> str:
    try:
        return log_path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def wait_for_server(proc: subprocess.Popen, url: str, log_path: Path, api_key: str = "", timeout_s: float = 300.0) -> None:
    """Poll ``url``/models until it answers 200; raise ServerDied as soon as ``proc`` exits, naming how."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rc = proc.poll()
        if rc is not None:
            tail = _log_tail(log_path)
            if rc < 0:
                v = _llama_version()
                raise NativeBuildError(crash_paragraph("llama-cpp-python", v, f"(its server) {describe_exit(rc)}", llama_rebuild_command(v), tail))
            raise ServerDied(f"the local model server {describe_exit(rc)} before it answered; its log ({log_path}) ends: {one_line(tail, 600)}")
        try:
            if httpx.get(f"{url}/models", headers=headers, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    proc.kill()
    raise ServerDied(
        f"the local model server did not answer at {url} within {timeout_s:.0f} s; its log ({log_path}) ends: {_log_tail(log_path)[-600:]}"
    )


def start_llama_server(spec: LlamaServerSpec, log_path: Path, timeout_s: float = 300.0) -> subprocess.Popen:
    """Check the build, start the server with its output in ``log_path``, wait until it answers."""
    check_llama_cpp(spec.model)
    log = open(log_path, "w")  # a pipe would fill up and block the server
    proc = subprocess.Popen(spec.argv(), stdout=log, stderr=subprocess.STDOUT)
    log.close()  # the child holds its own descriptor
    try:
        wait_for_server(proc, spec.url, log_path, spec.api_key, timeout_s)
    except BaseException:
        if proc.poll() is None:
            proc.kill()
        raise
    return proc
