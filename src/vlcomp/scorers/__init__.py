"""Text-only scorers: higher score = more likely / more acceptable caption."""

from vlcomp.scorers.base import TextScorer

__all__ = ["TextScorer"]
