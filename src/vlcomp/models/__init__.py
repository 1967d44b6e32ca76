"""Models: the catalogue (``catalogue``, torch-free: specs, context lengths), the sources of
transformers models (``hf_models``, torch-free), and the loaders (``loading.load_model``: one
registry, one ``LoadedModel`` for open_clip, transformers dual encoders and pair scorers).
Importing this package imports no torch; the loaders do."""
