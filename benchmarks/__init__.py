"""Benchmarks composed above training and evaluation: the Table-3 sweep (``sweep``) and the speed
benchmarks with DeepfakeBench-style baselines used by ``scripts/bench_*.py``."""
