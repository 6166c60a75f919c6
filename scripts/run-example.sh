#!/usr/bin/env bash
# The main job, for a fresh machine: installs dependencies, builds effopt,
# exports the example models with PyTorch and imports the small GPT into the
# eff dialect, printing its IR (weights elided) and a one-screen summary.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

OUT=examples/out
/usr/bin/python3 examples/export_examples.py --out "$OUT"

MODEL=${1:-$OUT/gpt.onnx}
echo
echo "== eff IR of $MODEL (weights elided) =="
build/bin/effopt-translate --import-onnx "$MODEL" --elide-weights
echo "== summary =="
build/bin/effopt-translate --import-onnx "$MODEL" --summary-only
