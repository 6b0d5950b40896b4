"""The model zoo: real architectures at toy sizes, shared by tests/zoo/ and
benchmarks/bench_models.py (`tests.zoo.models` from the checkout root, or `zoo.models` with
tests/ on sys.path)."""
