"""Benchmarks and one-off measurements behind the figures in ``eval/results/``.

Each is a module run from the repository root, e.g. ``python -m benchmarks.bench_discover
--help``, and they import one another as ``benchmarks.<name>``. Results are written to
``eval/results/`` by default (the page screenshots and text screens to ``docs/``). Not part
of the installed package.
"""
