"""Measuring fieldguide: retrieval metrics, naive baselines, stage ablation, benchmarks, quality gate."""
