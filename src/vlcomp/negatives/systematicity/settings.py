"""Names, settings and compound positions of the CREPE systematicity negatives
(``vlcomp.negatives.systematicity``): the families, ``DEFAULT_SETTINGS`` and their check
(``resolve_settings``), and which atom kind and target label each compound position has."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BENCHMARK = "crepe_systematicity"
GENERATOR = "template:wordnet"
ATOM, COMP = "atom", "comp"
# Failure of an item whose every compound has a depiction noun ("a blue image"): never a
# target (``lexicon.META_NOUNS``).
META_COMPOUND = "compound_of_meta_noun"
FAMILIES: tuple[str, ...] = (ATOM, COMP)

# the whole-text tells ``atoms.FoilBalance`` matches at generation
BALANCES: tuple[str, ...] = ("distinct_words", "atoms", "compounds", "plausibility")

DEFAULT_SETTINGS: dict[str, Any] = {
    "min_count": 10,  # vocabulary: training atoms seen at least this often
    "atom_negatives": 4,  # HN-ATOM retrieval set: 1 positive + 4
    "comp_negatives": 6,  # HN-COMP retrieval set: 1 positive + 6
    "compounds": "target",  # or "single" (CREPE: items with exactly one compound)
    "allow_fewer": False,  # keep items with fewer negatives than asked
    "max_foils": 20,  # foils per atom position scored (best tiers/closest kin first)
    "comp_foils": 6,  # best foils per position combined into HN-COMP candidates
    "image_scope": True,  # drop foiled compounds true elsewhere in the image
    "senses": "coherent",  # WordNet senses: coherent | all | <int> (tools/senses_check.py)
    "max_hops": 2,
    "min_depth": 3,
    "image_ref": "image_id",  # candidates' image: image_id | xywh (image_id#xywh=x,y,w,h)
    # whole-text statistics matched at generation (``atoms.FoilBalance``): a foil may be
    # an atom of the item's own scene, and each position's foils are chosen so that over
    # the benchmark they hold as many more distinct words than their positives as fewer,
    # bring each atom and compound in as often as they take it out, and are as often the
    # less probable text as the more probable one
    "scene_foils": True,
    "balance": list(BALANCES),
    # items whose caption is one text at most (0: no cap); at 1, a foil text is one
    # item's too and no item's caption
    "max_recurrence": 1,
}

# Target labels (CANDIDATES_SCHEMA.target) and atom kinds of each compound position.
POSITIONS: dict[str, tuple[str, ...]] = {
    "attr_obj": ("att", "obj"),
    "obj_rel_obj": ("subj", "pred", "obj"),
}
POSITION_KIND = {"att": "attribute", "obj": "object", "subj": "object", "pred": "relation"}
POSITION_TARGET = {"att": "att", "obj": "obj", "subj": "obj", "pred": "rel"}
COMP_TARGET = {"attr_obj": "att", "obj_rel_obj": "rel"}
# HN-COMP: (position foiled in the first compound, position foiled in the second).
COMP_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {
    "attr_obj": (("obj", "att"),),
    "obj_rel_obj": (("obj", "subj"), ("pred", "subj"), ("obj", "pred")),
}


def resolve_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """``DEFAULT_SETTINGS`` updated with ``settings``; unknown keys and bad values raise."""
    out = dict(DEFAULT_SETTINGS)
    unknown = sorted(set(settings or {}) - set(out))
    if unknown:
        raise ValueError(f"unknown CREPE negatives setting(s) {unknown}; known: {sorted(out)}")
    out.update(settings or {})
    if (
        not isinstance(out["max_recurrence"], int)
        or isinstance(out["max_recurrence"], bool)
        or (out["max_recurrence"] < 0)
    ):
        raise ValueError(f"max_recurrence must be an integer >= 0, got {out['max_recurrence']!r}")
    for key in ("min_count", "atom_negatives", "comp_negatives", "max_foils", "comp_foils"):
        if not isinstance(out[key], int) or isinstance(out[key], bool) or out[key] < 1:
            raise ValueError(f"{key} must be an integer >= 1, got {out[key]!r}")
    if out["compounds"] not in ("target", "single"):
        raise ValueError(f"compounds must be 'target' or 'single', got {out['compounds']!r}")
    if out["image_ref"] not in ("image_id", "xywh"):
        raise ValueError(f"image_ref must be 'image_id' or 'xywh', got {out['image_ref']!r}")
    balance = out["balance"]
    if not isinstance(balance, list | tuple) or set(balance) - set(BALANCES):
        raise ValueError(f"balance must be a list of {list(BALANCES)}, got {balance!r}")
    out["balance"] = [b for b in BALANCES if b in balance]
    for key in ("allow_fewer", "image_scope", "scene_foils"):
        if not isinstance(out[key], bool):
            raise ValueError(f"{key} must be true or false, got {out[key]!r}")
    return out
