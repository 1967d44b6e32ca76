"""Throughput benchmarks, one module per stage (``snakemake benchmarks``), and their report
(``report``)."""
