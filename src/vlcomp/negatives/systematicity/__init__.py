"""CREPE systematicity hard negatives (Ma et al., CVPR 2023): HN-ATOM and HN-COMP.

Each evaluation item (``EVAL_ITEMS_SCHEMA``: a region's text and its scene graph) gets a
*target compound*, an ``attr_obj`` (attribute, object) or ``obj_rel_obj`` (subject,
predicate, object) compound of its graph (``vlcomp.counts.units`` definitions), and
up to two retrieval sets, each one candidate item of ``CANDIDATES_SCHEMA``:

- **HN-ATOM** (family ``atom``, item ``<item_id>/atom``): the caption with one atom of the
  target compound replaced by a WordNet foil (``wordnet_foils``): "a red car" -> "a blue
  car", "a red bike". Default 1 positive + 4 negatives. Negatives take the atom positions
  in turn (a seeded order), each position's foils best first;
- **HN-COMP** (family ``comp``, item ``<item_id>/comp``): the target compound split into two
  compounds, each holding one atomic foil, joined by "and": "a red car" -> "a red bike and
  a blue car" (CREPE's construction: every atom of the original occurs, never together).
  For ``obj_rel_obj`` the two foiled positions are (object, subject), (predicate,
  subject) or (object, predicate): "dog on table" -> "dog on chair and cat on table".
  Default 1 + 6.

Whole-text statistics are matched at generation (``scene_foils``, ``balance_distinct``,
``max_recurrence``; ``atoms.DistinctBalance``): a foil may be an atom of the item's own
graph, each target's foils are chosen so that over the benchmark they hold as many more
distinct words than their positives as fewer, and a caption text is one item's positive
(later items fail as ``recurring_text``) and an HN-ATOM foil text one item's foil. With
``scene_foils: false`` (CREPE's rule) foils of an atom are never atoms of the item's graph
(same kind). A foiled compound that is true somewhere in the item's image (the union of
the graphs of all items with the same ``image_id``, when ``image_scope``) is dropped.
Foils of one position are ranked by relation tier (antonyms first) and then by a
text-only scorer on the edited caption (higher = more plausible); HN-COMP candidates are
the combinations of the ``comp_foils`` best foils per position, ranked by summed tier and
score, preferring unused foils.

Which compound: CREPE builds its systematicity negatives from region descriptions with
one compound. ``compounds: single`` keeps exactly that (items whose graph has another
number of distinct compounds fail as ``not_one_compound``). The default ``target`` takes
every item with a compound: the target is a compound the caption states unambiguously,
unseen compounds first when the split assignments are given (so a UC item's negatives
test its novel compound), then in a seeded order; the first target with enough foils is
used. The rest of the caption is left as it is. A compound with a depiction noun
(``lexicon.META_NOUNS``: "image", "photo", "background", ...) is never a target, and no
such noun is an object foil (``wordnet_foils.vocabulary_from``).

Text edits act on the caption's words: an atom is replaced where the compound is stated
as a phrase (attributes directly before their noun, possibly with other attributes of the
same object in between: "large green triangle"; a relation as subject, up to two filler
words, predicate, then the object after at most five determiners/attributes). A compound
stated twice or not as such a phrase is not a target. Plural nouns get plural foils, "a"/
"an" before a replaced word are fixed, the case of a capitalised word is kept. Relation
predicates may appear as any phrasing of their lexicon class ("over" for "above").

Candidate rows: ``benchmark`` the benchmark's name (default "crepe_systematicity"),
``image`` the item's image_id (or ``image_id#xywh=x,y,w,h`` with ``image_ref: xywh``),
``generator`` "template:wordnet",
``target`` null for the positive, for an HN-ATOM negative the replaced position (``att``,
``obj``, ``rel``), for an HN-COMP negative the compound kind (``att`` for attr_obj, ``rel``
for obj_rel_obj); ``provenance`` JSON with ``foil``, ``original``, ``position``,
``relation`` (antonym, cohyponym, ...), ``via`` (the shared hypernym), ``compound`` and
``seed`` (lists of two for HN-COMP).

Items without valid negatives are never dropped silently: the failures table counts, per
family, each item without a retrieval set by reason (level ``item``), items kept with fewer
negatives when ``allow_fewer`` (level ``kept_short``), the foil look-ups of the targets
by atom kind and outcome (level ``foil``) and, with a ``context.ContextCheck``, the
negatives passed over because they tokenise like the positive within the text encoders'
context (level ``negative``, reason ``context: identical within N tokens``; the next
candidate in rank order takes the place). The region box of each candidate item goes to a
side table (``REGIONS_SCHEMA``) keyed by the candidate item_id.

Modules: ``settings`` (names, ``DEFAULT_SETTINGS``, compound positions), ``graph`` (an
item's graph and the facts of its image), ``caption`` (where a compound is stated and the
text edits), ``atoms`` (the per item plan and the HN-ATOM choice), ``compounds`` (HN-COMP
combinations and choice), ``tables`` (schemas and rows), ``build`` (the pure builder and its
failure accounting) and ``job`` (the job function: files in, files out).
"""

from __future__ import annotations

from .atoms import plan_item
from .build import build_systematicity_negatives
from .caption import Mention, Token, atom_text, comp_text, locate, tokenize
from .graph import Compound, CompoundKey, Graph, SceneFacts, parse_graph
from .job import read_unseen, systematicity_negatives
from .settings import (
    ATOM,
    BENCHMARK,
    COMP,
    COMP_PAIRS,
    COMP_TARGET,
    DEFAULT_SETTINGS,
    FAMILIES,
    GENERATOR,
    META_COMPOUND,
    POSITION_KIND,
    POSITION_TARGET,
    POSITIONS,
    resolve_settings,
)
from .tables import FAILURES_SCHEMA, REGIONS_SCHEMA, SystematicityNegatives

__all__ = [
    "ATOM",
    "BENCHMARK",
    "COMP",
    "COMP_PAIRS",
    "COMP_TARGET",
    "DEFAULT_SETTINGS",
    "FAILURES_SCHEMA",
    "FAMILIES",
    "GENERATOR",
    "META_COMPOUND",
    "POSITIONS",
    "POSITION_KIND",
    "POSITION_TARGET",
    "REGIONS_SCHEMA",
    "Compound",
    "CompoundKey",
    "Graph",
    "Mention",
    "SceneFacts",
    "SystematicityNegatives",
    "Token",
    "atom_text",
    "build_systematicity_negatives",
    "comp_text",
    "locate",
    "parse_graph",
    "plan_item",
    "read_unseen",
    "resolve_settings",
    "systematicity_negatives",
    "tokenize",
]
