"""Text normalization of graph atoms, shared by the training counts and the eval side.

Every comparison between an evaluation item and the training tables goes through these
functions, so that both sides agree on what counts as "the same" atom:

- ``normalize_text``: case-fold and collapse whitespace (attributes, predicates, lemmas).
- ``singularize``: the object side of a BindSplit binding. Rule-based on the noun as
  written (not on a parser's lemma, which turns "glasses" into "glass"): irregular plurals,
  nouns kept as they are ("glasses", "scissors", "sheep", "bus", "cross"), then suffix rules.
  Only the last word of a multi-word noun is singularized ("tennis balls" -> "tennis ball").
"""

from __future__ import annotations

import re

NORMALIZATION_VERSION = "1"

# Plural-only nouns, invariant plurals, and singulars that end in "s".
KEEP_AS_IS: frozenset[str] = frozenset(
    """
    glasses sunglasses eyeglasses spectacles goggles binoculars scissors shears pliers tongs
    tweezers pants trousers jeans shorts tights leggings pajamas pyjamas overalls briefs
    panties knickers slacks sweatpants trunks clothes headphones earphones earbuds
    suds stairs outskirts premises remains surroundings thanks belongings congratulations
    news series species means physics mathematics economics politics athletics gymnastics
    aerobics measles mumps billiards darts dominoes
    sheep deer fish moose bison salmon trout swine cod aircraft spacecraft hovercraft
    offspring cattle police
    bus gas lens canvas atlas bias alias iris chassis tennis christmas pancreas asparagus
    octopus cactus walrus hippopotamus platypus virus campus circus bonus status census
    abacus apparatus citrus crocus fungus hibiscus lotus nucleus papyrus radius stimulus
    syllabus thesaurus torus uterus hummus couscous asbestos chaos cosmos ethos pathos
    kudos axis basis crisis oasis thesis analysis diagnosis tuberculosis
    this his its is was yes us plus minus
    """.split()
)

IRREGULAR: dict[str, str] = {
    "men": "man",
    "women": "woman",
    "children": "child",
    "people": "person",
    "feet": "foot",
    "teeth": "tooth",
    "geese": "goose",
    "mice": "mouse",
    "lice": "louse",
    "oxen": "ox",
    "dice": "die",
    "knives": "knife",
    "wives": "wife",
    "lives": "life",
    "midwives": "midwife",
    "leaves": "leaf",
    "loaves": "loaf",
    "wolves": "wolf",
    "shelves": "shelf",
    "halves": "half",
    "calves": "calf",
    "scarves": "scarf",
    "thieves": "thief",
    "elves": "elf",
    "selves": "self",
    "hooves": "hoof",
    "wharves": "wharf",
    "sheaves": "sheaf",
    "cacti": "cactus",
    "fungi": "fungus",
    "octopi": "octopus",
    "nuclei": "nucleus",
    "radii": "radius",
    "stimuli": "stimulus",
    "alumni": "alumnus",
    "criteria": "criterion",
    "phenomena": "phenomenon",
    "bacteria": "bacterium",
    "data": "datum",
    "media": "medium",
    "vertebrae": "vertebra",
    "larvae": "larva",
    "antennae": "antenna",
    "indices": "index",
    "vertices": "vertex",
    "matrices": "matrix",
    "appendices": "appendix",
    "quizzes": "quiz",
    "menus": "menu",
    "emus": "emu",
    "gurus": "guru",
    "tutus": "tutu",
    "haikus": "haiku",
    "gnus": "gnu",
    # -oes plurals of nouns in -o (other -oes words drop only the "s": shoes, toes, canoes)
    "potatoes": "potato",
    "tomatoes": "tomato",
    "heroes": "hero",
    "echoes": "echo",
    "volcanoes": "volcano",
    "mangoes": "mango",
    "torpedoes": "torpedo",
    "mosquitoes": "mosquito",
    "buffaloes": "buffalo",
    "tornadoes": "tornado",
    "vetoes": "veto",
    "embargoes": "embargo",
    # -es plurals of singulars in -s that the suffix rules would cut wrongly
    "buses": "bus",
    "busses": "bus",
    "gases": "gas",
    "lenses": "lens",
    "canvases": "canvas",
    "atlases": "atlas",
    "biases": "bias",
    "aliases": "alias",
    "irises": "iris",
    "octopuses": "octopus",
    "cactuses": "cactus",
    "walruses": "walrus",
    "platypuses": "platypus",
    "viruses": "virus",
    "campuses": "campus",
    "circuses": "circus",
    "bonuses": "bonus",
    "censuses": "census",
    "statuses": "status",
    "axes": "axe",
    "bases": "base",
    "crises": "crisis",
    "oases": "oasis",
    "theses": "thesis",
    "analyses": "analysis",
    "diagnoses": "diagnosis",
}

# Nouns ending in -ie, whose plural -ies must not become -y.
_IE_NOUNS: frozenset[str] = frozenset(
    """
    cookie movie zombie selfie hoodie brownie smoothie rookie calorie goalie prairie pixie
    genie collie birdie beanie veggie magpie necktie bowtie lingerie auntie sweetie yuppie
    hippie groupie newbie freebie budgie boogie sortie talkie walkie
    """.split()
)

# -ches plurals of nouns in -che (the default rule cuts -ches to -ch: "beaches" -> "beach").
_CHE_NOUNS: frozenset[str] = frozenset(
    "mustache moustache headache toothache earache stomachache backache niche cache cliche "
    "avalanche creche quiche psyche microfiche panache".split()
)

_VOWELS = "aeiou"
_WORD_END = re.compile(r"(\S+)$")


def normalize_text(value: str | None) -> str | None:
    """Case-fold and collapse whitespace; ``None`` for missing or blank values.

    (``str.split`` also splits on the ASCII separator controls \\x1c-\\x1f, so they never
    survive normalization.)
    """
    if value is None:
        return None
    out = " ".join(value.casefold().split())
    return out or None


def _singular_word(word: str) -> str:
    if word in KEEP_AS_IS or len(word) <= 2:
        return word
    if word in IRREGULAR:
        return IRREGULAR[word]
    if not word.endswith("s") or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        stem = word[:-3]
        return stem + "ie" if stem + "ie" in _IE_NOUNS else stem + "y"
    if word.endswith(("sses", "shes", "xes", "zzes")):
        return word[:-2]
    if word.endswith("ches"):
        return word[:-1] if word[:-1] in _CHE_NOUNS else word[:-2]
    return word[:-1]


def singularize(noun: str | None) -> str | None:
    """Singular form of a (normalized or raw) English noun; ``None`` for a blank noun.

    The input is normalized first (``normalize_text``); only its last word changes.
    """
    text = normalize_text(noun)
    if text is None:
        return None
    if text in KEEP_AS_IS or text in IRREGULAR:
        return IRREGULAR.get(text, text)
    match = _WORD_END.search(text)
    assert match is not None  # a normalized text is non-empty
    head, last = text[: match.start(1)], match.group(1)
    return head + _singular_word(last)
