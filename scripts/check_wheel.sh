#!/usr/bin/env bash
# Does finrag work installed from its wheel, without the checkout?
#
# Builds the wheel from a copy of the working tree, installs it into a fresh virtualenv in a
# temporary folder (torch pinned to the CPU build first, as `make install` does; the other
# dependencies from the package index, through pip's cache), then, from a folder outside the
# checkout and with nothing of the checkout on sys.path:
#   1. checks the installed package is the one imported and carries its SQL models,
#   2. `dagster definitions validate -m finrag_dagster.definitions`,
#   3. a short `finrag demo` (a 6-ticker world, decisions over two weeks; a few minutes on 2 cores).
# Exits non-zero at the first failure. KEEP=1 keeps the temporary folder; PY picks the Python (3.11).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-python3}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/finrag-wheel.XXXXXX")"
if [ "${KEEP:-0}" = 1 ]; then echo "keeping $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi
unset PYTHONPATH FINRAG_CONFIG FINRAG_LAKE
T0=$(date +%s)
step() { echo "== [$(( $(date +%s) - T0 ))s] $*"; }

step "copying the working tree (tracked and untracked, not ignored) to $WORK/src"
mkdir -p "$WORK/src"
git -C "$ROOT" ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -f "$ROOT/$f" ] && printf '%s\0' "$f"; done |
  tar -C "$ROOT" --null -T - -cf - | tar -C "$WORK/src" -xf -

step "building the wheel"
"$PY" -m pip wheel -q --no-deps -w "$WORK/dist" "$WORK/src"
WHEEL="$(ls "$WORK"/dist/finrag-*.whl)"
echo "   $(basename "$WHEEL")"

step "installing it into a fresh virtualenv"
"$PY" -m venv "$WORK/venv"
V="$WORK/venv/bin"
quiet() { { grep -v "is ignored: it is neither a file nor a directory" || true; }; }  # this machine's pip.conf names absent local indexes
"$V/pip" install -q --upgrade pip 2>&1 | quiet
"$V/pip" install -q torch==2.13.0 2>&1 | quiet  # the CPU build on local disk first, so nothing pulls a CUDA build
"$V/pip" install -q -c "$ROOT/constraints.txt" "$WHEEL" 2>&1 | quiet

mkdir -p "$WORK/run"
cd "$WORK/run"
export DAGSTER_HOME="$WORK/run/.dagster_home" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export FINRAG_CONFIG="$WORK/run/check.toml"
mkdir -p "$DAGSTER_HOME"
cp "$WORK/src/.dagster_home/dagster.yaml" "$DAGSTER_HOME/"  # the instance settings the repository ships
cat > check.toml <<'TOML'
# scripts/check_wheel.sh: a small embedded world, decisions 2019-02-04 .. 2019-02-15
lake_dir = "data_lake"
[world]
seed = 11
n_tickers = 6
n_sectors = 3
start = 2017-11-01
end = 2019-03-29
news_start = 2018-11-01
[calendar]
start = 2017-11-01
end = 2019-03-29
decision_start = 2019-02-04
[splits]
train = [2019-01-01, 2019-01-31]
validation = [2019-02-04, 2019-02-08]
test = [2019-02-11, 2019-03-29]
TOML

step "the installed package is the one imported, with its SQL models"
"$V/python" - "$ROOT" <<'PY'
import sys
from pathlib import Path

import finrag_dagster
from finrag_dagster.core.storage.sqlmodels import SQL_DIR, load_models

root = Path(sys.argv[1]).resolve()
where = Path(finrag_dagster.__file__).resolve()
assert Path(sys.prefix).resolve() in where.parents, f"finrag_dagster imported from {where}, not from the virtualenv"
assert root not in where.parents, f"finrag_dagster imported from the checkout {where}"
models = [m.name for m in load_models()]
assert {"returns", "stock_day_signals", "table1_audit"} <= set(models), f"SQL models in {SQL_DIR}: {models}"
print(f"   {where.parent}; SQL models {models}")
PY

# `dg check defs` works inside a dg project (the checkout's pyproject.toml); an installed wheel with
# no project around it is validated by module, as a user deploying the wheel does
step "dagster definitions validate -m finrag_dagster.definitions"
"$V/dagster" definitions validate -m finrag_dagster.definitions

step "finrag demo (decisions 2019-02-04 .. 2019-02-15)"
"$V/finrag" demo --start 2019-02-04 --end 2019-02-15 > demo.log 2>&1 || { tail -40 demo.log; exit 1; }
grep -E "^done in|report:" demo.log
"$V/python" -c 'from finrag_dagster.core.tables import Lake; l = Lake("data_lake"); assert l.read("evaluation").height and l.read("reader_outputs").height, "no evaluation or reader outputs"'

step "ok: the wheel installs and runs without the checkout"
