# -*- Python -*-
# lit configuration for effopt's regression and end-to-end tests.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "EFFOPT"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.effopt_obj_root, "test")

# Inputs/ folders hold models, data and generator scripts, not tests;
# lib/ holds the C++ of test-only passes.
config.excludes = ["Inputs", "lib", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
# Debian's PyTorch, ONNX and numpy live under /usr/bin/python3, not under
# whatever python3 is first on PATH.
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("%effopt_src", config.effopt_src_root))
# mlir-runner's support libraries (printMemref*), next to LLVM's tools.
config.substitutions.append(("%mlir_runner_libs", ",".join(
    os.path.join(os.path.dirname(config.llvm_tools_dir), "lib", lib)
    for lib in ["libmlir_runner_utils.so", "libmlir_c_runner_utils.so"])))
config.substitutions.append(("%onnx_inputs",
                             os.path.join(config.effopt_src_root, "test",
                                          "Import", "ONNX", "Inputs")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.effopt_tools_dir, append_path=True)

tools = ["effopt-opt", "effopt-translate", "effc"]
config.available_features.add("effc")
for optional in ["effrt-inspect", "effrt-unit-tests", "effopt-import-fuzzer",
                 "effrun", "effrt-make-test-model", "effrt-capi-test",
                 "effrt-collectives-test", "effrt-cuda-attention-emulation"]:
    if os.path.exists(os.path.join(config.effopt_tools_dir, optional)):
        tools.append(optional)
        config.available_features.add(optional)
llvm_config.add_tool_substitutions(tools, [config.effopt_tools_dir])
# Data-parallel tests start ranks with Open MPI's mpirun (openmpi-bin, which
# scripts/install-deps.sh installs).
if shutil.which("mpirun"):
    config.available_features.add("mpirun")

# CUDA: "cuda-driver" where libcuda.so.1 loads, "cuda-device" where its
# cuInit succeeds and it sees a GPU. GPU tests REQUIRE cuda-device, so
# without a GPU they report UNSUPPORTED, never passed.
def _cuda_features():
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return []
    features = ["cuda-driver"]
    count = ctypes.c_int(0)
    try:
        if (cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0
                and count.value > 0):
            features.append("cuda-device")
    except AttributeError:
        pass
    return features


for feature in _cuda_features():
    config.available_features.add(feature)

# The cuda target compiles device code with the CUDA toolkit's ptxas and
# fatbinary (effc reads $EFFOPT_CUDA_TOOLKIT, default /usr/local/cuda).
# cuobjdump, when the toolkit has it, lists what a fatbin holds; without it
# effrt-inspect --list-fatbin does.
cuda_toolkit = os.environ.get("EFFOPT_CUDA_TOOLKIT", "/usr/local/cuda")
config.environment["EFFOPT_CUDA_TOOLKIT"] = cuda_toolkit
if all(os.access(os.path.join(cuda_toolkit, "bin", tool), os.X_OK)
       for tool in ("ptxas", "fatbinary")):
    config.available_features.add("cuda-toolkit")
cuobjdump = os.path.join(cuda_toolkit, "bin", "cuobjdump")
if not os.access(cuobjdump, os.X_OK):
    cuobjdump = shutil.which("cuobjdump")
if cuobjdump:
    config.available_features.add("cuobjdump")
    config.substitutions.append(("%cuobjdump", cuobjdump))

# effc and effrun built with oneDNN: convolution=library.
if getattr(config, "effopt_have_onednn", False):
    config.available_features.add("onednn")

# PyTorch's own CPU bf16 kernels compute in f32 and round once (its oneDNN
# kernels on CPUs with AVX-512; torch 1.13 on AVX2-only CPUs sums bf16
# products in bf16): what a check against them as they are needs
# (lib/lowp_vs_torch.py probes the same; its other checks emulate bf16
# where torch's kernels do not round once).
def _torch_bf16_rounds_once():
    import subprocess
    lib = os.path.join(os.path.dirname(__file__), "E2E", "lib")
    probe = ("import sys; sys.path.insert(0, %r); import lowp_vs_torch as l; "
             "sys.exit(0 if l.BF16_NATIVE else 1)" % lib)
    try:
        return subprocess.run(["/usr/bin/python3", "-c", probe],
                              capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


if _torch_bf16_rounds_once():
    config.available_features.add("torch-bf16-rounds-once")

# Where effc and effrun live, for scripts that run them.
config.substitutions.append(("%effopt_bin", config.effopt_tools_dir))

# The ONNX backend node tests ship in Debian's libonnx-testdata.
config.substitutions.append(("%onnx_node_tests",
                             "/usr/share/libonnx-testdata/data/node"))
