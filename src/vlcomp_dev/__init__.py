"""vlcomp_dev: development tooling for vlcomp, kept out of the runtime package.

The throughput benchmarks (``vlcomp_dev.bench``, run by ``snakemake benchmarks``), the scale
run (``scale``), the GPU precision check (``precision_check``), the LLM validator's precision
measurement (``llm_precision``) and the static conda-environment check (``envcheck``). It may
import ``vlcomp``; ``vlcomp`` never imports it.
"""
