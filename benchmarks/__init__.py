"""Benchmarks and real-code corpora for te-microbatch-lint (not part of the installed package)."""
