"""`finrag dev` (what `make dev` runs) stops, children included, within seconds of Ctrl-C or SIGTERM."""

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

pytestmark = pytest.mark.slow


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _live_members(pgid: int) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pgid=,stat=,pid=,args="], capture_output=True, text=True).stdout
    rows = [line.split(None, 3) for line in out.splitlines()]
    return [r[3] if len(r) > 3 else r[2] for r in rows if len(r) >= 3 and r[0] == str(pgid) and not r[1].startswith("Z")]


def _wait_gone(pgid: int, seconds: float) -> float:
    t0 = time.monotonic()
    while _live_members(pgid) and time.monotonic() - t0 < seconds:
        time.sleep(0.25)
    return time.monotonic() - t0


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_finrag_dev_stops_within_seconds(tmp_path, how):
    port = _port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "FINRAG_LAKE": str(tmp_path / "lake")}
    # a terminal's Ctrl-C interrupts the whole foreground process group; a service manager sends SIGTERM to the main process
    proc = subprocess.Popen(
        [sys.executable, "-m", "finrag_dagster.cli", "dev", "--port", str(port)],
        env=env,
        start_new_session=True,
        stdout=open(tmp_path / "dev.log", "w"),
        stderr=subprocess.STDOUT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    dagster_pgid = None
    try:
        deadline = time.time() + 240
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.time() < deadline, (tmp_path / "dev.log").read_text()[-3000:]
            time.sleep(1)
        time.sleep(3)
        ps = subprocess.run(["ps", "-eo", "pgid=,args="], capture_output=True, text=True).stdout.splitlines()
        (dagster_pgid,) = {int(line.split(None, 1)[0]) for line in ps if "dagster dev" in line and f"-p {port}" in line}
        inner = _live_members(dagster_pgid)
        assert any("dagster_webserver" in m for m in inner) and any("_daemon" in m for m in inner), inner
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=60)
        took = max(_wait_gone(proc.pid, 30), _wait_gone(dagster_pgid, 30))
        assert rc == 0, (tmp_path / "dev.log").read_text()[-2000:]
        assert took < 15, (_live_members(proc.pid), _live_members(dagster_pgid))  # dagster dev's own group included
    finally:
        for pgid in (proc.pid, dagster_pgid):  # never leave a server behind, whatever failed
            if pgid is not None and _live_members(pgid):
                os.killpg(pgid, signal.SIGKILL)
