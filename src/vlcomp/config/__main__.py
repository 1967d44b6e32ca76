"""``python -m vlcomp.config > config/README.md``: the configuration reference."""

from vlcomp.config.docs import config_docs

print(config_docs(), end="")
