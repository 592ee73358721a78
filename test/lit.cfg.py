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
config.substitutions.append(("%configs", os.path.join(config.autoshard_src_root, "..", "shared", "configs")))

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# So that `not`, FileCheck, etc. resolve anywhere in a pipeline.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# The model builder is run with the project's Python (a venv under build/).
config.environment["PYTHONPATH"] = os.path.join(config.autoshard_src_root, "python")
config.substitutions.append(("%python", config.python_executable))

tool_dirs = [config.autoshard_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(["shard-opt"], tool_dirs)
