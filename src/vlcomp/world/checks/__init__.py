"""The world's ground-truth checks, over the tables the workflow built from the world's files:
split agreement with the known hold-outs (``groundtruth``), metrics on held-in vs held-out
images (``heldout``), the world-grammar caption reader (``grammar``), the oracle scorers
(``oracles``) and the benchmarks' oracle evaluation and false negatives
(``oracle_evaluation``), and linear probes on frozen features (``probes``). The generator
(``vlcomp.world``) is a source of files and never imports these."""
