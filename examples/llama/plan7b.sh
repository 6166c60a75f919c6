#!/usr/bin/env bash
# The memory plan of one LLaMA-7B training step (batch 1 x seq 512), per
# precision, optimizer and remat policy, from shapes alone: writes the graph
# (no weights), runs `effc --shapes-only --report-json` per row and prints
# one Markdown table of the bytes at the planned peak by category
# (docs/LargeModels.md holds its output).
#
#   examples/llama/plan7b.sh [OUTDIR]      (default /tmp/effopt-llama7b)
#
# EFFC (default build/bin/effc), BATCH and SEQ (default 1 and 512) and the
# row flags below can be overridden
# from the environment; a row whose flags this effc does not know prints
# the error instead of numbers. Extra rows: ROWS_EXTRA="label|flags;...".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-/tmp/effopt-llama7b}
effc=${EFFC:-$root/build/bin/effc}
batch=${BATCH:-1}
seq=${SEQ:-512}
python=/usr/bin/python3
mkdir -p "$out"

# LoRA as QLoRA's paper applies it: on every linear projection of the
# blocks (q, k, v, o, gate, up, down); alpha = 2r.
ADAMW8BIT=${ADAMW8BIT:---optimizer adamw8bit}
LORA=${LORA:-'--lora rank=16,alpha=32,targets=layers\.[0-9]+\..*_proj\.weight'}
QLORA=${QLORA:-$LORA --qlora}

rows=(
  "fp32, AdamW, remat none|--precision fp32 --optimizer adamw --remat none"
  "fp32, AdamW, remat full|--precision fp32 --optimizer adamw --remat full"
  "bf16 autocast, AdamW, remat none|--precision bf16 --optimizer adamw --remat none"
  "bf16 autocast, AdamW, remat full|--precision bf16 --optimizer adamw --remat full"
  "bf16 + 8-bit AdamW, remat none|--precision bf16 $ADAMW8BIT --remat none"
  "LoRA r=16 (bf16), remat none|--precision bf16 $LORA --remat none"
  "QLoRA r=16 (NF4 frozen, bf16) + full remat|--precision bf16 $QLORA --remat full"
)
if [ -n "${ROWS_EXTRA:-}" ]; then
  IFS=';' read -r -a extra <<< "$ROWS_EXTRA"
  rows+=("${extra[@]}")
fi

"$python" "$here/make_llama_onnx.py" --config 7b --batch "$batch" --seq "$seq" \
  -o "$out/llama7b.onnx" >&2

i=0
: > "$out/rows.txt"
for row in "${rows[@]}"; do
  label=${row%%|*}
  flags=${row#*|}
  json="$out/row$i.json"
  rm -f "$json"
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  if "$effc" "$out/llama7b.onnx" --shapes-only $flags --report-json "$json" \
       > "$out/row$i.log" 2>&1; then
    status=ok
  else
    status=$(grep -m1 'error' "$out/row$i.log" || tail -n1 "$out/row$i.log")
  fi
  end=$(date +%s.%N)
  printf '%s\t%s\t%s\t%s\t%s\n' "$label" "$flags" "$json" "$status" \
    "$(echo "$end - $start" | bc)" >> "$out/rows.txt"
  i=$((i + 1))
done

"$python" - "$out/rows.txt" <<'EOF'
import json
import sys

cats = ["parameters", "gradients", "optimizer state", "activations",
        "temporaries", "workspace", "batch and loss"]
gib = lambda b: "%.2f" % (b / 2**30)  # noqa: E731
print("| configuration | " + " | ".join(cats) + " | peak | allocated | effc s |")
print("| --- " * (len(cats) + 4) + "|")
for line in open(sys.argv[1]):
    label, flags, path, status, seconds = line.rstrip("\n").split("\t")
    if status != "ok":
        print("| %s | %s |" % (label, "not planned: " + status.replace("|", "/")))
        continue
    r = json.load(open(path))
    by = r["peak"]["by_category"]
    cells = ["%s (%s GiB)" % (format(by[c], ","), gib(by[c])) for c in cats]
    print("| %s | %s | %s (%s GiB) | %s (%s GiB) | %.1f |" % (
        label, " | ".join(cells), format(r["peak"]["bytes"], ","),
        gib(r["peak"]["bytes"]), format(r["total_bytes"], ","),
        gib(r["total_bytes"]), float(seconds)))
print()
print("Flags per row (after `effc llama7b.onnx --shapes-only`):")
for line in open(sys.argv[1]):
    label, flags = line.split("\t")[:2]
    print("- %s: `%s`" % (label, flags))
EOF
