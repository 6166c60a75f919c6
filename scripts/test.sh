#!/usr/bin/env bash
# Runs every effopt test: installs what is missing, builds, then runs the lit
# suite (dialect, importer, tools, runtime formats, ONNX node tests, PyTorch
# exports) and the Python package's pytest suite (test/Python). Ends with one
# line summing both: "N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

BUILD_DIR=${EFFOPT_BUILD_DIR:-build}
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
status=0
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test" 2>&1 | tee "$LOG" || status=$?

# The Python package against the same build (test/Python/conftest.py).
PYLOG=$(mktemp)
trap 'rm -f "$LOG" "$PYLOG"' EXIT
pystatus=0
EFFOPT_BUILD_DIR="$(cd "$BUILD_DIR" && pwd)" \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider test/Python 2>&1 |
  tee "$PYLOG" || pystatus=$?
# pytest's exit 5 means it collected no test: a failure here, not a pass.
if [ "$pystatus" -ne 0 ] && [ "$status" -eq 0 ]; then status=$pystatus; fi

# lit's summary plus pytest's as the plain closing line CI reads.
lit_counts=$(awk '{ n = $0; sub(/^[^:]*: */, "", n); n = n + 0 }
     /^ *Passed *:/ { passed = n }
     /^ *(Failed|Unexpectedly Passed|Unresolved|Timed Out) *:/ { failed += n }
     END { printf "%d %d\n", passed, failed }' "$LOG")
# pytest -q's last line: "3 failed, 10 passed, 1 error in 25.1s".
py_counts=$(tail -n 1 "$PYLOG" | awk '{
     for (i = 2; i <= NF; i++) {
       w = $i; sub(/,$/, "", w)
       if (w == "passed") p += $(i - 1)
       if (w == "failed" || w == "error" || w == "errors") f += $(i - 1)
     } }
     END { printf "%d %d\n", p, f }')
read -r lit_passed lit_failed <<<"$lit_counts"
read -r py_passed py_failed <<<"$py_counts"
# No Python test at all (exit 5) counts as one failure.
if [ "$pystatus" -eq 5 ]; then py_failed=$((py_failed + 1)); fi
if [ "$pystatus" -ne 0 ] && [ "$pystatus" -ne 5 ] && [ "$py_failed" -eq 0 ]; then
  py_failed=1   # pytest itself broke (import error, usage): count it
fi
echo "$((lit_passed + py_passed)) passed, $((lit_failed + py_failed)) failed"
exit $status
