#!/usr/bin/env bash
# make test's two tiers at once. The tests that wait on a clock or start a browser (pytest.ini's `serial`: the
# browser's player at 4 steps/s, Ray's replicas, every Chromium: a second one beside a timed player took its frames)
# run one at a time at normal priority; beside them, every other test on three workers at the lowest priority
# (nice 19), so that they only take the CPU the clocked tests leave: a browser check uses about one core of two, and
# the tiers one after the other left the other core idle for minutes. A third worker runs while another waits on a
# server or a subprocess; OMP_WAIT_POLICY=PASSIVE: a worker's torch threads sleep at a barrier rather than spin on a
# core another worker could use. The low-priority tier's output comes after the other's; the exit status is non-zero
# when either tier fails. --no-loadscope-reorder: the workers take the modules in the order tests/conftest.py gives
# them, the longest first (xdist's own order, the modules with the most tests first, left long ones for the end,
# alone on a half-idle machine).
#
#   scripts/test_tiers.sh [PYTHON]     (run from the repository root; default .venv/bin/python)
set -uo pipefail
py=${1:-.venv/bin/python}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
OMP_WAIT_POLICY=PASSIVE nice -n 19 "$py" -m pytest -q --require-tools -n 3 --dist loadscope --no-loadscope-reorder -m "not serial and not peers" tests >"$log" 2>&1 &
rest=$!
"$py" -m pytest -q --require-tools -m "serial and not peers" tests
clocked=$?
wait "$rest"
others=$?
echo "--- the other tests (run beside the clocked ones, at low priority) ---"
cat "$log"
exit $(( clocked != 0 || others != 0 ))
