# The GoogleTest unit binaries, run by lit one test case at a time.
import os
import lit.formats

config.name = "Lockstep-Unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.lockstep_binary_dir, "test", "unit")
config.test_exec_root = config.test_source_root
