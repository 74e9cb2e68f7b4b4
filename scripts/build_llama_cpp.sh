#!/usr/bin/env bash
# Builds llama-cpp-python from source for a fixed, portable instruction-set baseline and installs it.
#
# llama.cpp's default build is native (GGML_NATIVE=ON: -march=native), so a wheel made on one CPU
# carries that CPU's exact instruction sets; on some machines (an AVX-512/AMX Xeon) the native build
# even crashes on the machine that built it. This script builds with GGML_NATIVE=OFF and names the
# baseline instead:
#   x86_64  : x86-64-v3 (SSE4.2, AVX, AVX2, BMI2, FMA, F16C; no AVX-512, no AMX) — every x86-64 CPU
#             sold since about 2015 (Intel Haswell, AMD Zen 1) has it
#   aarch64 : ggml's generic ARMv8 build (GGML_NATIVE=OFF)
# The wheel is kept in ~/.cache/finrag/wheels/<version>-<baseline>-<sha of the flags>/ and built
# with --no-cache-dir: pip's own wheel cache is keyed by the download, not by CMAKE_ARGS, so it
# would hand a natively built wheel back to a portable install without a word.
#
# Usage: scripts/build_llama_cpp.sh PIP [VERSION]      (PIP: the pip of the target environment)
# FINRAG_LLAMA_NATIVE=1 builds the native variant instead; FINRAG_LLAMA_BUILD_ONLY=1 builds (or finds)
# the wheel, prints its folder as the last line and installs nothing (benchmarks/llama_portable.py).
set -euo pipefail
PIP="${1:?usage: build_llama_cpp.sh PIP [VERSION]}"
VERSION="${2:-$(sed -n 's/^llama_cpp_python==//p' "$(dirname "$0")/../constraints.txt")}"
ARCH="$(uname -m)"
if [ "${FINRAG_LLAMA_NATIVE:-0}" = 1 ]; then
  BASELINE=native
  FLAGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF"
elif [ "$ARCH" = x86_64 ]; then
  BASELINE=x86-64-v3
  FLAGS="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
  FLAGS="$FLAGS -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF"
  FLAGS="$FLAGS -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF"
else
  BASELINE="$ARCH-generic"
  FLAGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"
fi
KEY="$(printf '%s' "$VERSION $FLAGS" | sha256sum | cut -c1-12)"
DIR="${FINRAG_WHEEL_CACHE:-$HOME/.cache/finrag/wheels}/llama_cpp_python-$VERSION-$BASELINE-$KEY"
quiet() { { grep -v "is ignored: it is neither a file nor a directory" || true; }; }
if ! ls "$DIR"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python $VERSION for $BASELINE (GGML flags: $FLAGS); a few minutes"
  rm -rf "$DIR.tmp" && mkdir -p "$DIR.tmp"
  CMAKE_ARGS="$FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$PIP" wheel -q --no-deps --no-cache-dir --no-binary llama_cpp_python \
    -w "$DIR.tmp" "llama_cpp_python==$VERSION" 2>&1 | quiet
  rm -rf "$DIR" && mv "$DIR.tmp" "$DIR"   # a killed build leaves no half wheel behind
  printf '%s\n' "$FLAGS" >"$DIR/CMAKE_ARGS"
fi
if [ "${FINRAG_LLAMA_BUILD_ONLY:-0}" = 1 ]; then echo "$DIR"; exit 0; fi
"$PIP" install -q --force-reinstall --no-deps "$DIR"/llama_cpp_python-*.whl 2>&1 | quiet
echo "llama-cpp-python $VERSION installed, built for $BASELINE ($DIR)"
