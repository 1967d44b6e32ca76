"""Stages ``embed`` and ``metrics``: models, training, embedding, ranking of candidate sets,
metrics and statistics. ``jobs`` holds the functions the workflow rules call."""
