#!/usr/bin/env bash
# llama.cpp as a bench peer (`python -m paradec bench --peers llamacpp`): pyproject.toml's `peers` extra,
# compiled from its source distribution for the instruction sets this CPU reports. Not part of `make setup`
# or `make test`: the build takes 7-10 minutes on 2 cores.
#
#   scripts/install_peers.sh [PYTHON]      (run from anywhere; default: the repository's .venv/bin/python)
#   scripts/install_peers.sh --flags       print the CMAKE_ARGS it would build with, and nothing else
#
# CPUINFO: the file the CPU's flags are read from (default /proc/cpuinfo; the tests pass others).
#
# Why not ggml's native build (-DGGML_NATIVE=ON): on an Intel Xeon that reports AMX, it compiles ggml's AMX
# path, and the first prompt dies with SIGILL where the sandbox does not give a process AMX state (turning the
# AMX options off does not help while GGML_NATIVE is on). So the build names each instruction set instead,
# read from /proc/cpuinfo, with AMX off. The peer runs in a process of its own all the same
# (paradec/peers/llamacpp.py): a crash of its native code is one line in bench's results.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

cmake_args() {
  local flags args="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  flags=" $(grep -m1 '^flags' "${CPUINFO:-/proc/cpuinfo}" | cut -d: -f2) "
  # cpuinfo's flag -> ggml's option
  for pair in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI avx512f:AVX512 \
              avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
    if [[ $flags == *" ${pair%%:*} "* ]]; then args+=" -DGGML_${pair#*:}=ON"; else args+=" -DGGML_${pair#*:}=OFF"; fi
  done
  echo "$args"
}

if [ "${1:-}" = "--flags" ]; then cmake_args; exit 0; fi
py=${1:-$root/.venv/bin/python}
# the extra's pins, read from pyproject.toml (one place); paradec itself is left as it was installed
mapfile -t pins < <("$py" -c 'import sys, tomllib; print(*tomllib.load(open(sys.argv[1], "rb"))
["project"]["optional-dependencies"]["peers"], sep="\n")' "$root/pyproject.toml")
export CMAKE_ARGS; CMAKE_ARGS=$(cmake_args)
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
echo "install_peers: building ${pins[*]} with CMAKE_ARGS=$CMAKE_ARGS" >&2
"$py" -m pip install --no-binary llama-cpp-python "${pins[@]}"
"$py" -c 'import llama_cpp; print("install_peers: llama_cpp", llama_cpp.__version__, "imports")'
