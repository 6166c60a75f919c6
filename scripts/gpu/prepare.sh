#!/usr/bin/env bash
# Prepares the GPU suite and the GPU benchmark HERE (where effc runs) for a
# machine that has a GPU but no LLVM/MLIR (docs/GpuSuite.md):
#   - every model of the suite exported, its data and initial PyTorch state,
#     every variant compiled with `effc --target T` (scripts/gpu/suite.py);
#   - GPT-2 124M for bench/gpu_vs_torch.py (zero weights: the .effx stays
#     small; the weights are drawn there), compiled for each batch size;
#   - the runtime built alone (cmake -S runtime), with the shared libraries
#     effrun needs that the GPU image lacks, and the headers a rebuild there
#     needs;
# all into one folder (default build-gpu/, ignored by git), whose size is
# checked against the device tool's 64 MiB. Prints the `carry` list.
#
# usage: scripts/gpu/prepare.sh [--target cuda|cpu] [--out DIR] [--bin BUILD/bin]
#                               [--bench-config gpt2|tiny] [--no-bench]
#                               [--only-attention] [--bench-effc FLAG]...
#                               [--conv]
# --bench-effc FLAG: an extra effc flag for the benchmark's GPT-2 (repeat it
# for several), e.g. --bench-effc --remat --bench-effc selective.
# --only-attention: only the runtime (effrun and libeffrt_attention_check.so,
# for scripts/gpu/run.sh --only-attention); the suite and the benchmark of
# an earlier prepare are left as they are. About a minute.
# --conv: also ResNet-18 for bench/gpu_conv.py (im2col + cuBLASLt against
# cuDNN; run.sh --conv runs it). About a minute more.
# --target cpu --bench-config tiny: the dry run that proves the flow on CPU
# (then scripts/gpu/run.sh --dir DIR --device-kind cpu).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

TARGET=cuda OUT=build-gpu BIN=build/bin BENCH_CONFIG=gpt2 BENCH=1 ONLY_ATTENTION=0 CONV=0
BENCH_EFFC=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) TARGET=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --bench-config) BENCH_CONFIG=$2; shift 2 ;;
    --no-bench) BENCH=0; shift ;;
    --only-attention) ONLY_ATTENTION=1; shift ;;
    --bench-effc) BENCH_EFFC+=("--effc=$2"); shift 2 ;;
    --conv) CONV=1; shift ;;
    *) echo "prepare.sh: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3   # PyTorch 1.13 + onnx: the exporter (docs/GpuSuite.md)
LIMIT=$((48 * 1024 * 1024))   # well under the device tool's 64 MiB
PACK_ABOVE=${PACK_ABOVE:-$((32 * 1024 * 1024))}   # xz the .effx files above this
case "$OUT" in /*) ;; *) OUT=$ROOT/$OUT ;; esac
case "$BIN" in /*) ;; *) BIN=$ROOT/$BIN ;; esac
if [ "$ONLY_ATTENTION" = 1 ]; then
  :  # no effc needed: the runtime alone
elif [ ! -x "$BIN/effc" ]; then
  echo "prepare.sh: no effc in $BIN (build first: scripts/build.sh)" >&2
  exit 1
fi
# effc names its targets in --help: say so now rather than after the exports.
if [ "$ONLY_ATTENTION" = 0 ] && ! "$BIN/effc" --help 2>/dev/null | grep -A3 -- "--target=" | grep -qw "$TARGET"; then
  echo "prepare.sh: this effc has no --target $TARGET ($BIN/effc --help lists its targets)" >&2
  exit 1
fi
T0=$(date +%s)
if [ "$ONLY_ATTENTION" = 1 ]; then
  rm -rf "$OUT/rt" "$OUT/out"
else
  rm -rf "$OUT/suite" "$OUT/bench" "$OUT/conv" "$OUT/rt" "$OUT/out"
fi
mkdir -p "$OUT"

if [ "$ONLY_ATTENTION" = 0 ]; then
echo "== suite: exports and effc --target $TARGET"
"$PY" scripts/gpu/suite.py prepare --out "$OUT/suite" --bin "$BIN" --target "$TARGET"
# ONNX files and their external data are not needed there.
rm -f "$OUT"/suite/*.onnx "$OUT"/suite/*.onnx.data
fi

if [ "$BENCH" = 1 ] && [ "$ONLY_ATTENTION" = 0 ]; then
  echo "== bench: GPT-2 ($BENCH_CONFIG) and effc --target $TARGET"
  "$PY" bench/gpu_vs_torch.py prepare --out "$OUT/bench" --bin "$BIN" \
    --target "$TARGET" --config "$BENCH_CONFIG" "${BENCH_EFFC[@]}"
fi

if [ "$CONV" = 1 ] && [ "$ONLY_ATTENTION" = 0 ]; then
  echo "== conv: ResNet-18 and effc --target $TARGET"
  if [ "$TARGET" = cuda ]; then conv_args=(); else conv_args=(--batch 2 --size 32 --precision fp32); fi
  "$PY" bench/gpu_conv.py prepare --out "$OUT/conv" --bin "$BIN" --target "$TARGET" "${conv_args[@]}"
fi

echo "== runtime: cmake -S runtime (alone, as there: no MLIR)"
RTB=$ROOT/build-gpu-rt
export CCACHE_DIR=${CCACHE_DIR:-/work/.ccache}
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
cxx=(); if command -v clang++-22 >/dev/null; then cxx=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22); fi
# No OpenBLAS (36 MB; the GPU does the GEMMs, the CPU twin of the small GPT
# is fine with the portable loop; no oneDNN either, 38 MB: the CPU twins
# carried there have no convolutions); OpenMP kept (the CPU .effx links libomp).
cmake -G Ninja -S runtime -B "$RTB" -DCMAKE_BUILD_TYPE=Release \
  -DEFFRT_USE_OPENBLAS=OFF -DEFFRT_USE_ONEDNN=OFF -DEFFRT_BUILD_TESTS=OFF -DEFFRT_BUILD_FUZZERS=OFF \
  "${cxx[@]}" "${launcher[@]}" >/dev/null
# effrt_attention_check: the attention kernels (nvcc's fatbin, embedded)
# behind a C ABI for scripts/gpu/attention_check.py; effrt_conv_check: the
# cuDNN convolutions for scripts/gpu/conv_check.py.
ninja -C "$RTB" effrun effrt_attention_check effrt_conv_check >/dev/null
mkdir -p "$OUT/rt/bin" "$OUT/rt/lib" "$OUT/rt/include"
cp "$RTB/bin/effrun" "$OUT/rt/bin/"
strip "$OUT/rt/bin/effrun" 2>/dev/null || true
for lib in libeffrt_attention_check.so libeffrt_conv_check.so; do
  cp "$RTB/lib/$lib" "$OUT/rt/lib/"
  strip "$OUT/rt/lib/$lib" 2>/dev/null || true
done
if ! grep -q "^EFFRT_NVCC:FILEPATH=/" "$RTB/CMakeCache.txt"; then
  echo "   warning: no nvcc here: the carried runtime has no attention kernels"
fi
# Shared libraries: all but the C/C++ runtime every image has (glibc,
# libstdc++, libgcc_s); CUDA's come from the GPU image (dlopen at run time).
ldd "$OUT/rt/bin/effrun" | awk '/=> \// { print $1, $3 }' | while read -r name path; do
  case "$name" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    *) cp -L "$path" "$OUT/rt/lib/$name" ;;
  esac
done
# libomp for the CPU .effx's loops even if effrun itself did not link it.
if [ ! -e "$OUT/rt/lib/libomp.so.5" ] && [ -e /usr/lib/x86_64-linux-gnu/libomp.so.5 ]; then
  cp -L /usr/lib/x86_64-linux-gnu/libomp.so.5 "$OUT/rt/lib/"
fi
# Headers for a rebuild there (scripts/gpu/run.sh, when the carried effrun
# does not start): CLI11, nlohmann-json, zlib (header-only or tiny).
for h in /usr/include/CLI /usr/include/nlohmann /usr/include/zlib.h /usr/include/zconf.h; do
  if [ -e "$h" ]; then cp -rL "$h" "$OUT/rt/include/"; fi
done
[ -e "$OUT/rt/lib/libz.so.1" ] || cp -L /lib/x86_64-linux-gnu/libz.so.1 "$OUT/rt/lib/"
cat > "$OUT/rt/effrun" <<'WRAP'
#!/usr/bin/env bash
# effrun with the libraries carried beside it (scripts/gpu/prepare.sh).
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "${EFFRUN_BIN:-$here/bin/effrun}" "$@"
WRAP
chmod +x "$OUT/rt/effrun"
glibc=$(objdump -T "$OUT/rt/bin/effrun" "$OUT"/rt/lib/*.so* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
glibcxx=$(objdump -T "$OUT/rt/bin/effrun" 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
echo "$glibc $glibcxx" > "$OUT/rt/needs.txt"
"$OUT/rt/effrun" --help >/dev/null

# Which tree this is (the device tool's copy has no .git): run.sh prints it
# first, so a GPU session's note can name what ran.
{
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' +uncommitted changes')"
  echo "prepared $(date -u '+%Y-%m-%d %H:%M') UTC, --target $TARGET$([ "$CONV" = 1 ] && echo ' --conv')$([ "$ONLY_ATTENTION" = 1 ] && echo ' --only-attention')"
} > "$OUT/prepared.txt"

# What travels: everything under $OUT (the runtime's build folder stays here).
size=$(du -sb "$OUT" | cut -f1)
echo
echo "== $OUT: $((size / 1024)) KiB ($(find "$OUT" -type f | wc -l) files; effrun needs $glibc $glibcxx)"
du -sh "$OUT"/suite "$OUT"/bench "$OUT"/conv "$OUT"/rt 2>/dev/null | sed 's/^/   /' || true
if [ "$size" -gt "$PACK_ABOVE" ]; then
  # The device code makes .effx files large: xz them (about half); run.sh
  # unpacks them there (Python's lzma).
  echo "== over $((PACK_ABOVE / 1048576)) MiB: packing the .effx files with xz"
  find "$OUT" -name '*.effx' -print0 | xargs -0 -r xz -T0 -6 -f
  size=$(du -sb "$OUT" | cut -f1)
  echo "   now $((size / 1024)) KiB"
fi
if [ "$size" -gt "$LIMIT" ]; then
  echo "prepare.sh: $OUT is $((size / 1048576)) MiB, over the $((LIMIT / 1048576)) MiB this script allows (the device tool carries 64 MiB in all)" >&2
  exit 1
fi
rel=${OUT#$ROOT/}
# Variants effc could not compile stay in the manifests (the run reports
# them FAIL with effc's words); say so here too, last, where it is seen.
"$PY" - "$OUT" <<'PY'
import glob, json, os, sys
failed = []
for path in glob.glob(os.path.join(sys.argv[1], "*", "*.json")):
    try:
        manifest = json.load(open(path))
    except (OSError, ValueError):
        continue
    if not isinstance(manifest, dict):
        continue
    def walk(node, where):
        if isinstance(node, dict):
            if isinstance(node.get("error"), str) and "effx" in node:
                failed.append("%s %s: %s" % (os.path.basename(path), where,
                                             node["error"][:200]))
            for key, value in node.items():
                walk(value, "%s/%s" % (where, key) if where else key)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, "%s[%d]" % (where, i))
    walk(manifest, "")
for line in failed:
    print("prepare.sh: FAILED to compile: " + line)
if failed:
    print("prepare.sh: %d variant(s) did not compile; the run will report "
          "them FAIL" % len(failed))
PY
echo "prepare.sh: done in $(( $(date +%s) - T0 )) s (--target $TARGET)"
echo "carry: [\"$rel\"]"
if [ "$ONLY_ATTENTION" = 1 ]; then
  echo "run there: bash scripts/gpu/run.sh --dir $rel --only-attention   (docs/GpuSuite.md)"
elif [ "$TARGET" = cuda ]; then
  echo "run there: bash scripts/gpu/run.sh --dir $rel   (docs/GpuSuite.md gives the exact device call)"
else
  echo "dry run here: bash scripts/gpu/run.sh --dir $rel --device-kind cpu"
fi
