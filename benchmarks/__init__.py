"""Speed benchmarks and DeepfakeBench-style baselines (used by ``scripts/bench_*.py``; not part
of the installed library)."""
