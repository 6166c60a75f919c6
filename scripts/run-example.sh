#!/usr/bin/env bash
# The main job, for a fresh machine: installs dependencies, builds effopt,
# exports the example models with PyTorch, turns the King James Bible
# (Debian's bible-kjv) into a byte-level token stream, compiles the example
# GPT with effc and trains it with effrun (progress bar on a terminal, a JSONL
# log and a safetensors checkpoint in examples/out).
#
#   scripts/run-example.sh [STEPS]      (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
bash scripts/build.sh

STEPS=${1:-600}
OUT=examples/out
PY=/usr/bin/python3

echo "== exporting the example models from PyTorch =="
$PY examples/export_examples.py --out "$OUT"
$PY examples/make_token_stream.py --out "$OUT/kjv.bin"

echo
echo "== effc: $OUT/gpt.onnx -> $OUT/gpt.effx =="
build/bin/effopt-translate --import-onnx "$OUT/gpt.onnx" --summary-only
build/bin/effc "$OUT/gpt.onnx" -o "$OUT/gpt.effx" \
  --optimizer adamw --lr 3e-3 --weight-decay 0.1 \
  --schedule cosine --warmup-steps 50 --total-steps "$STEPS" --time

echo
echo "== effrun: $STEPS steps on the KJV Bible =="
rm -f "$OUT/gpt-train.jsonl"
build/bin/effrun "$OUT/gpt.effx" --data "$OUT/kjv.bin" --steps "$STEPS" \
  --log "$OUT/gpt-train.jsonl" --save "$OUT/gpt.safetensors"

# The loss must fall: mean of the first and last 20 logged steps.
$PY - "$OUT/gpt-train.jsonl" <<'EOF'
import json, math, sys
losses = [json.loads(l)["loss"] for l in open(sys.argv[1])]
first, last = sum(losses[:20]) / 20, sum(losses[-20:]) / 20
print(f"loss: {first:.3f} (first 20 steps) -> {last:.3f} (last 20 steps); "
      f"uniform over 256 bytes would be {math.log(256):.3f}")
if not last < first - 1.0:
    sys.exit("run-example: the loss did not fall; see " + sys.argv[1])
EOF
echo "checkpoint: $OUT/gpt.safetensors (resume with effrun ... --resume)"
