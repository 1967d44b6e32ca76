"""Refine stage: text-only scores, blind baselines, SugarCrepe adversarial refinement,
linguistic-prior analysis (Wu et al.) and checks against the published SugarCrepe."""

from vlcomp.contracts import text_key
from vlcomp.refine.adversarial import NORMALISATIONS, normalise_gaps, refine_mask
from vlcomp.refine.blind import TIE_POLICIES, accuracy_table, blind_accuracy, item_outcomes
from vlcomp.refine.candidates import as_pairs, check_items
from vlcomp.refine.priors import linguistic_prior_table, prior_heatmap_table
from vlcomp.refine.refinement import RefinementResult, refine_candidates, refined_candidates
from vlcomp.refine.scores import score_candidates
from vlcomp.refine.words import same_word_share, same_words, words

__all__ = [
    "NORMALISATIONS",
    "TIE_POLICIES",
    "RefinementResult",
    "accuracy_table",
    "as_pairs",
    "blind_accuracy",
    "check_items",
    "item_outcomes",
    "linguistic_prior_table",
    "normalise_gaps",
    "prior_heatmap_table",
    "refine_candidates",
    "refine_mask",
    "refined_candidates",
    "same_word_share",
    "same_words",
    "score_candidates",
    "text_key",
    "words",
]
