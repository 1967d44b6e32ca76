"""Word lists the graph extraction uses. Generic English, not tuned to one corpus.

Every list can be replaced through ``ExtractOptions`` (see ``extract``); these are the
defaults.
"""

from __future__ import annotations

# Caption boilerplate that is never an object of the scene: stock-photo and alt-text words
# ("... - stock illustration", "clipart png", "free download") and the scene's backdrop
# ("on a grey background"). A noun is dropped when its lemma, or the lemma of its whole
# compound, is listed; a compound that ends in listed words keeps the others ("circle
# icon" -> "circle"). Relations to a dropped noun are dropped with it.
DEFAULT_STOP_OBJECTS: frozenset[str] = frozenset(
    """
    stock vector clipart icon png jpg jpeg gif svg wallpaper download royalty free template
    graphic background backdrop foreground
    """.split()
) | frozenset({"clip art", "stock photo", "stock image", "free download", "flat design"})

# Nouns that frame the caption ("a picture of ...", "in this image", "this photo shows
# ...") but can also be real objects ("framed pictures on the wall"): dropped only in
# those framing positions (see ``extract``), or at the end of a compound ("circle
# illustration").
DEFAULT_FRAME_OBJECTS: frozenset[str] = frozenset(
    """
    image picture photo photograph pic snapshot illustration drawing design sketch
    """.split()
)
FRAMING_VERBS: frozenset[str] = frozenset("show depict feature capture display contain".split())

# Quantity and collection nouns: in "a group of people" the object is "people". Relations
# of the quantity noun are moved to the noun after "of".
PARTITIVES: frozenset[str] = frozenset(
    """
    group bunch pair couple lot lots number set herd flock crowd stack pile row line variety
    collection cluster team handful series assortment kind type sort piece slice bit bits
    """.split()
)

# Nouns that head the inner part of a multi-word preposition ("on top of", "to the left
# of"); the matcher in ``predicates`` builds its patterns from these.
RELATIONAL_NOUNS: tuple[str, ...] = (
    "top",
    "front",
    "back",
    "side",
    "middle",
    "center",
    "centre",
    "edge",
    "bottom",
    "corner",
    "end",
    "rear",
    "base",
    "left",
    "right",
)
RELATIONAL_PLURALS: dict[str, str] = {
    "sides": "side",
    "edges": "edge",
    "corners": "corner",
    "ends": "end",
}

# Containers keep the direction of "X of Y" ("a plate of food": the plate has the food);
# for other nouns "the tail of a plane" means the plane has the tail (Visual Genome style).
CONTAINERS: frozenset[str] = frozenset(
    """
    plate bowl cup glass bottle box bag basket jar bucket tray pot can carton mug vase pan
    bin crate dish pitcher jug sack barrel tub field
    """.split()
)

# Basic and common colour terms (British and American spellings).
COLOURS: frozenset[str] = frozenset(
    """
    red orange yellow green blue purple pink brown black white grey gray silver gold golden
    beige tan maroon navy teal turquoise cyan magenta violet indigo crimson khaki cream ivory
    lavender olive burgundy
    """.split()
)

# Basic colour terms: words that are almost never the first part of a compound noun, so one
# after a noun starts a new noun phrase in alt-text ("cross orange star").
BASIC_COLOURS: frozenset[str] = frozenset(
    "red orange yellow green blue purple pink brown black white grey gray".split()
)

# Words that modify a colour term into one colour value ("light blue", "dark green").
COLOUR_SHADES: frozenset[str] = frozenset(
    """
    light dark pale bright deep navy lime sky baby royal hot pastel neon forest olive dull
    """.split()
)

# Colour suffixes that join a shade into one value ("light colored").
COLOUR_WORDS_AFTER_SHADE: frozenset[str] = COLOURS | frozenset({"colored", "coloured"})

# Nouns written before another noun that describe it rather than name it ("metal poles",
# "brick wall"): they become attributes, not part of the object's name. Colour terms are
# added to this set.
MATERIALS: frozenset[str] = frozenset(
    """
    metal brick glass stone plastic concrete cement leather paper wood wooden iron steel
    rubber cotton wool denim silk marble granite ceramic porcelain straw wicker bamboo
    cardboard aluminum aluminium copper brass bronze
    """.split()
)

# Common adjectives that taggers mistake for compound nouns in headline-style text ("Small
# Red Hexagons"): at the start of a compound they are attributes.
DESCRIPTIVE_ADJECTIVES: frozenset[str] = frozenset(
    "small large big little tiny huge tall short long old young new round".split()
)

# Pronouns whose referent is the nearest earlier object ("a square with a circle above it").
ANAPHORS: frozenset[str] = frozenset("it them they this these those he she him her".split())
RELATIVE_PRONOUNS: frozenset[str] = frozenset("that which who whom".split())

COPULAS: frozenset[str] = frozenset({"be"})

NUMBER_WORDS: dict[str, str] = {
    w: str(k)
    for k, w in enumerate(
        """zero one two three four five six seven eight nine ten eleven twelve thirteen
        fourteen fifteen sixteen seventeen eighteen nineteen twenty""".split()
    )
}
NUMBER_WORDS["dozen"] = "12"
