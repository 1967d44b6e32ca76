"""Stage ``figures``: figures and Markdown summaries of the metric tables."""
