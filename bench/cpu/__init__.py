"""Issue 18's CPU benchmark (bench/serve_vs_ort.py, its one command),
by concern:

  env       paths, running and building the tools, the machine's facts,
            numpy's OpenBLAS and the memory copy bandwidth;
  config    the models and the sizes measured (full and --quick);
  models    writing the ONNX models (generated ones, the last-position
            variant) and compiling them with lockstep-opt;
  ort       onnxruntime's own greedy loop over past/present (class Ort);
  lockstep  Lockstep's side: bench's prompts, `lockstep-run bench`,
            `generate` and `exec` measurements;
  serve     the serving cases: prefill and decode, both systems back to back;
  gemm      the GEMM microbenchmark against numpy's OpenBLAS;
  tables    the report's number formats and groupings;
  report    the report: header and serving tables;
  report_gemm  the GEMM table, where a step's time goes, the invariance cost;
  results   writing the report (stdout, --out, bench/RESULTS.md's section);
  cli       the command line: a run, or the report of a --log.
"""
