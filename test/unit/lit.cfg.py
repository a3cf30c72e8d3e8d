# The GoogleTest unit binaries, run by lit one test case at a time.
import os
import lit.formats

config.name = "Lockstep-Unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = os.path.join(config.lockstep_binary_dir, "test", "unit")
config.test_exec_root = config.test_source_root

# A sanitized build (scripts/test-sanitize): any report aborts the test binary.
if getattr(config, "lockstep_sanitize", False):
    config.name = "Lockstep-Unit-asan"
    config.environment["ASAN_OPTIONS"] = (
        "halt_on_error=1:abort_on_error=1:detect_leaks=1:"
        "detect_stack_use_after_return=1:strict_string_checks=1")
    config.environment["UBSAN_OPTIONS"] = (
        "halt_on_error=1:abort_on_error=1:print_stacktrace=1")
