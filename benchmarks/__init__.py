"""Benchmarks for `make bench`: each bench_<name>.py has run(work: Path) -> BenchResult."""
