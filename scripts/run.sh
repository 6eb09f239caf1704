#!/usr/bin/env bash
# make run: the app on this machine, at http://localhost:PORT. PORT (make run PORT=N) picks the port; without it,
# the first free one from 8501. The app listens on this machine only (the Space's image names its own address).
#
#   scripts/run.sh PYTHON [streamlit options...]
set -euo pipefail
py=${1:?usage: scripts/run.sh PYTHON [streamlit options...]}
shift
free() { "$py" -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()' "$1" \
  2>/dev/null; }
if [ -n "${PORT:-}" ]; then
  case "$PORT" in *[!0-9]*|"") echo "paradec: PORT=$PORT is not a port number (make run PORT=8600)" >&2; exit 2;; esac
  if ! free "$PORT"; then
    echo "paradec: port $PORT is taken; pick another: make run PORT=$((PORT + 1))" >&2
    exit 2
  fi
  port=$PORT
else
  port=8501
  while ! free "$port"; do
    port=$((port + 1))
    [ "$port" -lt 8600 ] || { echo "paradec: ports 8501-8599 are all taken; pick one: make run PORT=N" >&2; exit 2; }
  done
fi
echo "paradec: open http://localhost:$port  (Ctrl-C stops it)"
"$py" -m paradec.kernel_note &  # a line only where the C++ kernel cannot be built, with its measured speed cost
exec "$py" -m streamlit run app.py --server.address localhost --server.port "$port" "$@"
