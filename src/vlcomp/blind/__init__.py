"""Blind attacks in one home: can a benchmark be solved from its texts alone?

- ``attacks``: the (positive, negative) pairs, their folds and the *debiasing panel* (length,
  word prior, changed words and their context, the corpora's text scorers, the generator's
  context model), with accuracies and intervals over items;
- ``debias``: the debiased variant, filtered and balanced against the debiasing panel only;
- ``families`` and ``certify``: the *certification panel*, families that read the whole
  text, refitted on each variant with folds of their own, which alone give the verdict;
- ``jobs``: the rules' entry points; ``figures``: the certificate's figure.

How a certificate is read (best attack, verdict, per-pair decisions) is in the ground,
``vlcomp.certificate``, so that the report reads it without this package's code.
"""
