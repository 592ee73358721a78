# -*- Python -*-
# lit configuration for the autoshard compiler tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "AUTOSHARD"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.autoshard_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%autoshard_src", config.autoshard_src_root))
# The build directory (scripts take it as BUILD_DIR).
config.substitutions.append(("%autoshard_build", config.autoshard_obj_root))
config.substitutions.append(("%configs", os.path.join(config.autoshard_src_root, "..", "shared", "configs")))
config.substitutions.append(("%data", os.path.join(config.autoshard_src_root, "..", "shared", "data")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# So that `not`, FileCheck, etc. resolve anywhere in a pipeline.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# The model builder is run with the project's Python (a venv under build/).
config.environment["PYTHONPATH"] = os.path.join(config.autoshard_src_root, "python")
config.substitutions.append(("%python", config.python_executable))

# The end-to-end tests (test/E2E) run compiled artifacts on the CPU runtime;
# one BLAS thread keeps them fast and deterministic on shared machines.
config.environment["OPENBLAS_NUM_THREADS"] = "1"

tool_dirs = [config.autoshard_tools_dir, config.llvm_tools_dir]
tools = ["shard-opt"]
# The runtime's tools (shard-run, shard-gradcheck) need OpenBLAS and
# nlohmann-json (runtime/CMakeLists.txt); without them the runtime is not
# built and tests that `REQUIRES: runtime` are reported as unsupported.
runtime_tools = ["shard-run", "shard-gradcheck"]
if all(os.path.exists(os.path.join(config.autoshard_tools_dir, t)) for t in runtime_tools):
    tools += runtime_tools
    # The resharding tests' checker (test/E2E/reshard-*.mlir).
    tools += ["shard-reshard-check"]
    config.available_features.add("runtime")
    # Multi-rank runs (`shard-run -n N`) need a shard-run built with MPI.
    if getattr(config, "autoshard_have_mpi", False):
        config.available_features.add("mpi")
llvm_config.add_tool_substitutions(tools, tool_dirs)
