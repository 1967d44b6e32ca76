"""Word lists of the text layer: English noun number and lemma exceptions."""

from __future__ import annotations

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
IE_NOUNS: frozenset[str] = frozenset(
    """
    cookie movie zombie selfie hoodie brownie smoothie rookie calorie goalie prairie pixie
    genie collie birdie beanie veggie magpie necktie bowtie lingerie auntie sweetie yuppie
    hippie groupie newbie freebie budgie boogie sortie talkie walkie
    """.split()
)

# -ches plurals of nouns in -che (the default rule cuts -ches to -ch: "beaches" -> "beach").
CHE_NOUNS: frozenset[str] = frozenset(
    "mustache moustache headache toothache earache stomachache backache niche cache cliche "
    "avalanche creche quiche psyche microfiche panache".split()
)

# Nouns that are plural in form only: their lemma is the word itself.
PLURAL_ONLY: frozenset[str] = frozenset(
    """
    glasses sunglasses eyeglasses goggles binoculars scissors shears pliers tongs pants
    trousers jeans shorts tights leggings pajamas pyjamas overalls clothes headphones
    earphones stairs news series species
    """.split()
)

# Verbs: the first rule whose form is a known lemma wins ("riding" -> "ride"), except for
# these ("singing" would be "singe").
VERB_LEMMA_FIXES: dict[str, str] = {
    "singing": "sing",
    "swinging": "swing",
    "clinging": "cling",
    "stinging": "sting",
    "slinging": "sling",
    "flinging": "fling",
}

# Nouns: the most specific rule wins ("crosses" -> "cross"), except for these.
NOUN_LEMMA_FIXES: dict[str, str] = {"vases": "vase", "cookies": "cookie", "uses": "use"}

# Prepositions and adverbs that open a predicate and are never lemmatised as verbs ("left
# of" stays, although "left" is also a form of "leave").
PREPOSITIONS: frozenset[str] = frozenset(
    """
    aboard about above across after against along alongside amid amidst among around as
    astride at atop before behind below beneath beside besides between beyond by close down
    during except far for from in inside into left like near nearby next of off on onto
    opposite out outside over past per right round since than through throughout to toward
    towards under underneath unlike until up upon via with within without
    """.split()
)
COPULA_FORMS: frozenset[str] = frozenset("be is are am was were been being 's 're".split())
ARTICLES: frozenset[str] = frozenset({"a", "an", "the"})
