#!/usr/bin/env bash
# Runs every effopt test: installs what is missing, builds, then runs the lit
# suite (dialect, importer, tools, runtime formats, ONNX node tests, PyTorch
# exports). Ends with one line: "N passed, M failed".
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

BUILD_DIR=${EFFOPT_BUILD_DIR:-build}
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
status=0
/usr/lib/llvm-22/bin/lit -sv "$BUILD_DIR/test" 2>&1 | tee "$LOG" || status=$?

# lit's summary as the plain closing line CI reads.
awk '{ n = $0; sub(/^[^:]*: */, "", n); n = n + 0 }
     /^ *Passed *:/ { passed = n }
     /^ *(Failed|Unexpectedly Passed|Unresolved|Timed Out) *:/ { failed += n }
     END { printf "%d passed, %d failed\n", passed, failed }' "$LOG"
exit $status
