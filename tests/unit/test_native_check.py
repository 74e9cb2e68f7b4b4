"""A compiled reader library is checked in a child before the pipeline loads it: a child that crashes
on purpose (SIGSEGV, SIGILL, a hang) stops the run with one paragraph, never a dead process."""

import importlib.util
import subprocess
import sys
import time

import pytest

from finrag_dagster.core.reader import native_check
from finrag_dagster.core.reader.llama_server import ServerDied, wait_for_server
from finrag_dagster.core.reader.native_check import NativeBuildError, check_native_build

SEGV = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
ILL = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FINRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(native_check, "_checked", {})


@pytest.mark.parametrize("code,signame", [(SEGV, "SIGSEGV"), (ILL, "SIGILL")])
def test_a_child_that_crashes_stops_with_one_paragraph(code, signame):
    with pytest.raises(NativeBuildError) as e:
        check_native_build("somepkg", "1.2.3", (code, []), "REBUILD-IT-THIS-WAY")
    msg = str(e.value)
    assert "somepkg 1.2.3" in msg and "crashes on this CPU" in msg and f"killed by {signame}" in msg
    assert msg.rstrip().endswith("REBUILD-IT-THIS-WAY") and "\n" not in msg


def test_a_child_that_hangs_counts_as_a_crash(monkeypatch):
    monkeypatch.setattr(native_check, "PROBE_TIMEOUT_S", 1.0)
    t0 = time.monotonic()
    with pytest.raises(NativeBuildError, match="killed by SIGKILL.*no answer within 1 s"):
        check_native_build("somepkg", "1", ("import time; time.sleep(60)", []), "R")
    assert time.monotonic() - t0 < 30


def test_a_python_error_in_the_child_is_named_not_called_a_crash():
    with pytest.raises(NativeBuildError) as e:
        check_native_build("somepkg", "1", ("raise ImportError('libfoo.so: cannot open shared object')", []), "R")
    assert "exited with status 1" in str(e.value) and "libfoo.so" in str(e.value) and "crashes on this CPU" not in str(e.value)


def test_a_passed_check_runs_once_per_build(tmp_path):
    check_native_build("somepkg", "1", ("print('fine')", []), "R", cache_key="abc")
    assert (tmp_path / "cache" / "native_checks" / "somepkg-abc.ok").read_text().strip() == "fine"
    native_check._checked.clear()  # a new process: the marker on disk answers, the crashing probe is not run
    check_native_build("somepkg", "1", (SEGV, []), "R", cache_key="abc")
    with pytest.raises(NativeBuildError):  # another build (another key) is checked again
        check_native_build("somepkg", "1", (SEGV, []), "R", cache_key="def")


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python not installed")
def test_the_llama_cpp_backend_checks_its_build_before_loading_it(monkeypatch, tmp_path):
    from finrag_dagster.core.reader.backends import BackendConfig, make_backend

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(native_check, "LLAMA_PROBE", SEGV)  # the build "crashes" in the child
    with pytest.raises(NativeBuildError) as e:
        make_backend(BackendConfig(backend="llama_cpp", model=str(gguf)))
    assert "llama-cpp-python" in str(e.value) and "GGML_NATIVE=OFF" in str(e.value) and "killed by SIGSEGV" in str(e.value)


def _server(tmp_path, code):
    log = tmp_path / "server.log"
    with open(log, "w") as f:
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=f, stderr=subprocess.STDOUT)
    return proc, log


def test_a_server_that_crashes_ends_the_wait_at_once(tmp_path):
    proc, log = _server(tmp_path, "import sys, time; print('loading model', flush=True); time.sleep(0.5); " + SEGV)
    t0 = time.monotonic()
    with pytest.raises(NativeBuildError) as e:
        wait_for_server(proc, "http://127.0.0.1:9/v1", log, timeout_s=120)
    assert time.monotonic() - t0 < 20  # not the 120 s of the timeout
    assert "its server" in str(e.value) and "killed by SIGSEGV" in str(e.value) and "loading model" in str(e.value)


def test_a_server_that_exits_names_its_log(tmp_path):
    proc, log = _server(tmp_path, "import sys; print('address already in use'); sys.exit(3)")
    with pytest.raises(ServerDied, match="exited with status 3.*address already in use"):
        wait_for_server(proc, "http://127.0.0.1:9/v1", log, timeout_s=120)
