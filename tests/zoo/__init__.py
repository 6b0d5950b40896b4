"""The model zoo: real architectures at toy sizes, shared by tests/zoo/ and
benchmarks/bench_models.py (`from zoo.models import MODELS` with tests/ on sys.path)."""
