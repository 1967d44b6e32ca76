"""vlcomp: vision-language compositionality benchmarks from a model's own training captions."""

__version__ = "0.1.0"
