"""Benchmarks run by ``make bench``; each prints its figures beside its baseline."""
