#!/usr/bin/env bash
# The GPU suite and the GPU benchmark, THERE (a machine with a GPU, PyTorch
# 2.x, CUDA, CMake, ninja, no LLVM/MLIR), on what scripts/gpu/prepare.sh
# wrote here (docs/GpuSuite.md). One command, about 5-8 minutes on an H100:
#   1. effrun: the carried build if it starts, else the runtime rebuilt
#      there from runtime/ (cmake, the carried headers and libraries);
#   2. scripts/gpu/suite.py run: one PASS/FAIL/UNSUPPORTED line per check,
#      a table, $OUT/gpu_suite.json (+ .log);
#   3. bench/gpu_vs_torch.py run: the GPT-2 124M table, $OUT/gpu_vs_torch.json
#      (+ .log);
#   4. with --attention / --only-attention: scripts/gpu/attention_check.py,
#      the runtime's CUDA attention kernels against PyTorch (under a
#      minute), $OUT/attention_check.json (+ .log); with --conv-check (or
#      --conv): scripts/gpu/conv_check.py, the runtime's cuDNN convolutions
#      against PyTorch, $OUT/conv_check.json (+ .log).
# Exit: 0 everything passed; 1 something failed; 3 no GPU (every check
# UNSUPPORTED: nothing passed).
#
# usage: scripts/gpu/run.sh [--dir build-gpu] [--device-kind cuda|cpu]
#          [--only CHECK-PREFIXES] [--no-suite] [--no-bench] [--bench-steps N]
#          [--suite-timeout S] [--bench-timeout S] [--budget S] [--profile]
#          [--attention] [--only-attention] [--conv] [--conv-check]
# --only-attention: only step 4 (the folder needs only rt/, e.g. from
# scripts/gpu/prepare.sh --only-attention); --attention adds it to 2 and 3.
# --conv: after the benchmark, bench/gpu_conv.py (ResNet-18: effopt's
# im2col + cuBLASLt against cuDNN; prepare.sh --conv), $OUT/gpu_conv.json.
# --profile: the benchmark also runs one effrun step under Nsight Compute
# (each kernel's time and DRAM bytes: GEMMs vs cuBLAS alone, effopt's
# kernels vs the copy bandwidth); about a minute more.
# --budget (default 540): the whole command's seconds; the benchmark gets at
# most what the build and the suite left of it (minus 15 s to write files).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
DIR=build-gpu KIND=cuda ONLY="" SUITE=1 BENCH=1 BENCH_STEPS=10 PROFILE=
SUITE_TIMEOUT=240 BENCH_TIMEOUT=330 BUDGET=540 ATTENTION=0 ATTENTION_TIMEOUT=90
CONV=0 CONV_TIMEOUT=120 CONVCHECK=0 CONVCHECK_TIMEOUT=90
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) DIR=$2; shift 2 ;;
    --device-kind) KIND=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --no-suite) SUITE=0; shift ;;
    --no-bench) BENCH=0; shift ;;
    --bench-steps) BENCH_STEPS=$2; shift 2 ;;
    --suite-timeout) SUITE_TIMEOUT=$2; shift 2 ;;
    --bench-timeout) BENCH_TIMEOUT=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --profile) PROFILE=--profile; shift ;;
    --attention) ATTENTION=1; shift ;;
    --only-attention) ATTENTION=1; SUITE=0; BENCH=0; shift ;;
    --conv) CONV=1; CONVCHECK=1; shift ;;
    --conv-check) CONVCHECK=1; shift ;;
    *) echo "run.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
case "$DIR" in /*) ;; *) DIR=$ROOT/$DIR ;; esac
OUT=${OUT:-$DIR/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
T0=$(date +%s)
if [ "$SUITE$BENCH" = 00 ] && [ "$ATTENTION" = 1 ]; then
  if [ ! -d "$DIR/rt" ]; then
    echo "run.sh: $DIR has no rt/ (run scripts/gpu/prepare.sh --only-attention here first, and carry its folder)" >&2
    exit 1
  fi
elif [ ! -f "$DIR/suite/suite.json" ] && [ ! -f "$DIR/bench/bench.json" ]; then
  echo "run.sh: $DIR holds no prepared suite (run scripts/gpu/prepare.sh here first, and carry its folder)" >&2
  exit 1
fi

# Python with PyTorch: $PYTHON, else python3 if it has torch, else Debian's.
if [ -z "${PYTHON:-}" ]; then
  if python3 -c "import torch" 2>/dev/null; then PYTHON=python3; else PYTHON=/usr/bin/python3; fi
fi
echo "== $(date -u +%H:%M:%S) machine: $(uname -m), $(nproc) cores; $("$PYTHON" -c 'import torch,sys; print("python %s, torch %s, cuda %s" % (sys.version.split()[0], torch.__version__, torch.version.cuda))' 2>&1 | tail -1)"
if [ -f "$DIR/prepared.txt" ]; then sed 's/^/   /' "$DIR/prepared.txt"; fi
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv,noheader 2>&1 | sed 's/^/   GPU: /'
else
  echo "   no nvidia-smi"
fi

# cuDNN 9 (the cuda convolutions dlopen libcudnn.so.9): the toolkit's, else
# the one PyTorch's wheels bring.
if ! ldconfig -p 2>/dev/null | grep -q 'libcudnn.so.9 ' &&
   [ ! -e /usr/local/cuda/lib64/libcudnn.so.9 ] && [ ! -e /usr/local/cuda/lib/libcudnn.so.9 ]; then
  CUDNN_DIR=$("$PYTHON" -c 'import glob, os, site
found = [p for s in site.getsitepackages() for p in glob.glob(os.path.join(s, "nvidia", "**", "libcudnn.so.9"), recursive=True)]
print(os.path.dirname(found[0]) if found else "")' 2>/dev/null)
  if [ -n "$CUDNN_DIR" ]; then
    export LD_LIBRARY_PATH="$CUDNN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "   cuDNN: $CUDNN_DIR (PyTorch's)"
  else
    echo "   no libcudnn.so.9 here: the cuda convolutions (CNN checks) will fail"
  fi
fi

# .effx files prepare.sh packed with xz (when the folder was large).
"$PYTHON" - "$DIR" <<'PY' || { echo "FAIL unpacking the .effx.xz files"; exit 1; }
import glob, lzma, os, shutil, sys
for packed in glob.glob(os.path.join(sys.argv[1], "*", "*.effx.xz")):
    with lzma.open(packed) as src, open(packed[:-3], "wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 24)
    os.remove(packed)
    print("   unpacked", os.path.basename(packed))
PY

# 1. effrun.
EFFRUN=$DIR/rt/effrun
ATTN_LIB=$DIR/rt/lib/libeffrt_attention_check.so
CONV_LIB=$DIR/rt/lib/libeffrt_conv_check.so
if ! "$EFFRUN" --help >/dev/null 2>"$OUT/effrun-start.txt"; then
  echo "== the carried effrun does not start here ($(head -c 300 "$OUT/effrun-start.txt")); building runtime/ here"
  RTB=/tmp/effrt-build
  t=$(date +%s)
  if cmake -G Ninja -S runtime -B "$RTB" -DCMAKE_BUILD_TYPE=Release \
       -DEFFRT_USE_OPENBLAS=OFF -DEFFRT_USE_OPENMP=OFF \
       -DEFFRT_BUILD_TESTS=OFF -DEFFRT_BUILD_FUZZERS=OFF \
       -DCMAKE_DISABLE_FIND_PACKAGE_CLI11=ON \
       -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON \
       -DEFFRT_CLI11_INCLUDE="$DIR/rt/include" \
       -DEFFRT_NLOHMANN_JSON_INCLUDE="$DIR/rt/include" \
       -DZLIB_INCLUDE_DIR="$DIR/rt/include" -DZLIB_LIBRARY="$DIR/rt/lib/libz.so.1" \
       >"$OUT/runtime-build.log" 2>&1 &&
     ninja -C "$RTB" effrun effrt_attention_check effrt_conv_check >>"$OUT/runtime-build.log" 2>&1; then
    export EFFRUN_BIN=$RTB/bin/effrun
    ATTN_LIB=$RTB/lib/libeffrt_attention_check.so
    CONV_LIB=$RTB/lib/libeffrt_conv_check.so
    echo "   built in $(( $(date +%s) - t )) s"
  else
    echo "FAIL runtime: neither the carried effrun nor a build here works (tail of $OUT/runtime-build.log):"
    tail -5 "$OUT/runtime-build.log"
    exit 1
  fi
fi
rm -f "$OUT/effrun-start.txt"

status=0
worst() { # keep the worst exit: 1 (fail) > 3 (unsupported) > 0
  if [ "$1" -eq 1 ] || [ "$status" -eq 1 ]; then status=1
  elif [ "$1" -ne 0 ]; then status=$1; fi
}

# 4. (first: under a minute, and what the fused-attention .effx runs rely on)
# The attention kernels against PyTorch.
if [ "$ATTENTION" = 1 ]; then
  echo "== $(date -u +%H:%M:%S) attention kernels vs PyTorch (at most $ATTENTION_TIMEOUT s)"
  LD_LIBRARY_PATH="$DIR/rt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout "$ATTENTION_TIMEOUT" "$PYTHON" scripts/gpu/attention_check.py --lib "$ATTN_LIB" \
    --out "$OUT/attention_check.json" 2>&1 | tee "$OUT/attention_check.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 124 ]; then echo "FAIL attention: timed out after $ATTENTION_TIMEOUT s"; rc=1; fi
  worst "$rc"; attention_rc=$rc
  # The faster of D = 64's tile sets (the same bits) for the suite and the
  # benchmark, unless the caller chose.
  if [ -z "${EFFRT_ATTENTION_WARP_ROWS:-}" ] && [ -f "$OUT/attention_check.json" ]; then
    rows=$("$PYTHON" -c 'import json,sys; r=json.load(open(sys.argv[1])).get("best_warp_rows"); print(r if r in (16, 32) else "")' "$OUT/attention_check.json" 2>/dev/null)
    if [ -n "$rows" ]; then
      export EFFRT_ATTENTION_WARP_ROWS=$rows
      echo "   attention: $rows rows a warp (the faster here) for the suite and the benchmark"
    fi
  fi
fi
# The cuDNN convolutions against PyTorch.
if [ "$CONVCHECK" = 1 ]; then
  echo "== $(date -u +%H:%M:%S) cuDNN convolutions vs PyTorch (at most $CONVCHECK_TIMEOUT s)"
  LD_LIBRARY_PATH="$DIR/rt/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    timeout "$CONVCHECK_TIMEOUT" "$PYTHON" scripts/gpu/conv_check.py --lib "$CONV_LIB" \
    --out "$OUT/conv_check.json" 2>&1 | tee "$OUT/conv_check.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 124 ]; then echo "FAIL conv-check: timed out after $CONVCHECK_TIMEOUT s"; rc=1; fi
  worst "$rc"; convcheck_rc=$rc
fi

# 2. The suite.
if [ "$SUITE" = 1 ] && [ -f "$DIR/suite/suite.json" ]; then
  echo "== $(date -u +%H:%M:%S) GPU suite (--device-kind $KIND)"
  timeout "$SUITE_TIMEOUT" "$PYTHON" scripts/gpu/suite.py run --dir "$DIR/suite" \
    --effrun "$EFFRUN" --device-kind "$KIND" --out "$OUT" ${ONLY:+--only "$ONLY"} \
    2>&1 | tee "$OUT/gpu_suite.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 124 ]; then echo "FAIL suite: timed out after $SUITE_TIMEOUT s"; rc=1; fi
  worst "$rc"; suite_rc=$rc
fi

# 3. The benchmark.
left=$(( BUDGET - ($(date +%s) - T0) - 15 ))
if [ "$BENCH" = 1 ] && [ "$left" -lt 60 ]; then
  echo "FAIL bench: not run, $left s left of the $BUDGET s budget"; worst 1; bench_rc=1
elif [ "$BENCH" = 1 ] && [ -f "$DIR/bench/bench.json" ]; then
  left=$(( BUDGET - ($(date +%s) - T0) - 15 ))
  # What the convolutions need stays theirs.
  if [ "$CONV" = 1 ]; then left=$(( left - CONV_TIMEOUT )); fi
  if [ "$left" -lt "$BENCH_TIMEOUT" ]; then BENCH_TIMEOUT=$left; fi
  echo "== $(date -u +%H:%M:%S) benchmark (at most $BENCH_TIMEOUT s)"
  timeout "$BENCH_TIMEOUT" "$PYTHON" bench/gpu_vs_torch.py run --dir "$DIR/bench" \
    --effrun "$EFFRUN" --device-kind "$KIND" --out "$OUT" --steps "$BENCH_STEPS" $PROFILE \
    2>&1 | tee "$OUT/gpu_vs_torch.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 124 ]; then echo "FAIL bench: timed out after $BENCH_TIMEOUT s"; rc=1; fi
  worst "$rc"; bench_rc=$rc
fi

# 5. Convolutions: ResNet-18, effopt against cuDNN.
if [ "$CONV" = 1 ]; then
  left=$(( BUDGET - ($(date +%s) - T0) - 10 ))
  if [ ! -f "$DIR/conv/conv.json" ]; then
    echo "FAIL conv: $DIR has no conv/ (scripts/gpu/prepare.sh --conv)"; worst 1; conv_rc=1
  elif [ "$left" -lt 30 ]; then
    echo "FAIL conv: not run, $left s left of the $BUDGET s budget"; worst 1; conv_rc=1
  else
    if [ "$left" -lt "$CONV_TIMEOUT" ]; then CONV_TIMEOUT=$left; fi
    echo "== $(date -u +%H:%M:%S) convolutions (at most $CONV_TIMEOUT s)"
    timeout "$CONV_TIMEOUT" "$PYTHON" bench/gpu_conv.py run --dir "$DIR/conv" \
      --effrun "$EFFRUN" --device-kind "$KIND" --out "$OUT" \
      2>&1 | tee "$OUT/gpu_conv.log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -eq 124 ]; then echo "FAIL conv: timed out after $CONV_TIMEOUT s"; rc=1; fi
    worst "$rc"; conv_rc=$rc
  fi
fi

word() { case "$1" in 0) echo PASS ;; 3) echo UNSUPPORTED ;; "") echo not-run ;; *) echo FAIL ;; esac; }
echo "== run.sh: suite $(word "${suite_rc:-}"), bench $(word "${bench_rc:-}"), attention $(word "${attention_rc:-}"), conv-check $(word "${convcheck_rc:-}"), conv $(word "${conv_rc:-}") in $(( $(date +%s) - T0 )) s; files in $OUT"
exit "$status"
