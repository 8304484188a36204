"""Benchmarks: run with `make bench`. They print medians and ratios; they never assert timings."""
