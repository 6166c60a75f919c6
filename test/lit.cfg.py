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
                 "effrt-collectives-test"]:
    if os.path.exists(os.path.join(config.effopt_tools_dir, optional)):
        tools.append(optional)
        config.available_features.add(optional)
llvm_config.add_tool_substitutions(tools, [config.effopt_tools_dir])
# Data-parallel tests start ranks with Open MPI's mpirun (openmpi-bin, which
# scripts/install-deps.sh installs).
if shutil.which("mpirun"):
    config.available_features.add("mpirun")

# effc and effrun built with oneDNN: convolution=library.
if getattr(config, "effopt_have_onednn", False):
    config.available_features.add("onednn")

# Where effc and effrun live, for scripts that run them.
config.substitutions.append(("%effopt_bin", config.effopt_tools_dir))

# The ONNX backend node tests ship in Debian's libonnx-testdata.
config.substitutions.append(("%onnx_node_tests",
                             "/usr/share/libonnx-testdata/data/node"))
