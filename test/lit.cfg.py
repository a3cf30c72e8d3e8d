# lit configuration for Lockstep. Run through scripts/test, or:
#   lit build/test
import os
import lit.formats

config.name = "Lockstep"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lockstep_binary_dir, "test")

bin_dir = os.path.join(config.lockstep_binary_dir, "bin")
config.environment["PATH"] = os.pathsep.join(
    [bin_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%models", os.path.join(config.lockstep_source_dir, "models")))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%lockstep_src", config.lockstep_source_dir))

