"""Benchmarks: python -m benchmarks runs them all."""
