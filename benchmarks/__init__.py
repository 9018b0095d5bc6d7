"""The benchmark scripts: ``python -m benchmarks.NAME --help``; current figures in benchmarks/README.md."""
