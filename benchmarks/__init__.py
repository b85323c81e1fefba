"""Benchmark sweeps composed above training and evaluation (DeepfakeBench's Table 3)."""
