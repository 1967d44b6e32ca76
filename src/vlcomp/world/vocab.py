"""Vocabulary of the synthetic world: defaults, colour values, surface forms.

Relation surface forms (what a caption may write -> canonical predicate):

======================  =========
surface form            predicate
======================  =========
to the left of          left of
left of                 left of
on the left of          left of
on the left side of     left of
to the right of         right of
right of                right of
on the right of         right of
on the right side of    right of
above                   above
over                    above
below                   below
under                   below
beneath                 below
underneath              below
======================  =========

Image coordinates grow downward, so "above" means a smaller centre y.
"""

from __future__ import annotations

from typing import Any

CANONICAL_RELATIONS: tuple[str, ...] = ("left of", "right of", "above", "below")

CONVERSE: dict[str, str] = {
    "left of": "right of",
    "right of": "left of",
    "above": "below",
    "below": "above",
}

# Surface forms per canonical predicate, for running text (clean captions).
RELATION_SURFACES: dict[str, tuple[str, ...]] = {
    "left of": ("to the left of", "left of", "on the left of", "on the left side of"),
    "right of": ("to the right of", "right of", "on the right of", "on the right side of"),
    "above": ("above", "over"),
    "below": ("below", "under", "beneath", "underneath"),
}

# Shorter forms for alt-text style captions.
ALT_RELATION_SURFACES: dict[str, tuple[str, ...]] = {
    "left of": ("left of", "to the left of"),
    "right of": ("right of", "to the right of"),
    "above": ("above", "over"),
    "below": ("below", "under"),
}

SURFACE_TO_PREDICATE: dict[str, str] = {
    surface: pred
    for table in (RELATION_SURFACES, ALT_RELATION_SURFACES)
    for pred, surfaces in table.items()
    for surface in surfaces
}

# Distinct, saturated RGB values; all far from the grey background.
COLOUR_RGB: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 150, 40),
    "blue": (30, 70, 220),
    "yellow": (245, 215, 0),
    "purple": (125, 40, 170),
    "orange": (250, 130, 0),
    "pink": (250, 120, 200),
    "brown": (125, 75, 25),
    "black": (20, 20, 20),
    "white": (255, 255, 255),
    "cyan": (0, 200, 220),
    "grey": (120, 120, 120),
}

BACKGROUND_RGB: tuple[int, int, int] = (215, 215, 215)

KNOWN_SHAPES: tuple[str, ...] = (
    "circle",
    "square",
    "triangle",
    "star",
    "cross",
    "diamond",
    "heart",
    "hexagon",
)

DEFAULT_SHAPES: list[str] = list(KNOWN_SHAPES)
DEFAULT_COLOURS: list[str] = ["red", "green", "blue", "yellow", "purple", "orange", "pink", "brown"]
DEFAULT_SIZES: list[str] = ["small", "large"]

# Object side as a fraction of the image side, for the smallest and largest size;
# intermediate sizes are spaced evenly in the order they are listed.
SIZE_FRACTION_RANGE: tuple[float, float] = (0.17, 0.31)

CAPTION_STYLES: tuple[str, ...] = ("clean", "alt_text")
CORPUS_FORMATS: tuple[str, ...] = ("cc12m_tsv", "laion_parquet")

NUMBER_WORDS: dict[int, str] = {
    2: "two",
    3: "three",
    4: "four",
    5: "five",
    6: "six",
    7: "seven",
    8: "eight",
    9: "nine",
}

DEFAULT_WORLD_CONFIG: dict[str, Any] = {
    "seed": 0,
    "image_size": 64,
    "objects_per_scene": [2, 4],
    "shapes": DEFAULT_SHAPES,
    "colours": DEFAULT_COLOURS,
    "sizes": DEFAULT_SIZES,
    "relations": list(CANONICAL_RELATIONS),
    "eval": {
        "n_images": 400,
        "captions_per_image": 5,
        "heldout_fraction": 0.4,
        "matched_twins": True,
    },
    "corpora": {
        "cc12m": {
            "format": "cc12m_tsv",
            "n_images": 4000,
            "caption_style": "clean",
            "seed": 1,
            "holdout": {
                "bindings": [
                    ["red", "circle"],
                    ["red", "square"],
                    ["green", "circle"],
                    ["green", "square"],
                ],
                "triples": [["circle", "above", "square"]],
                "atoms": ["hexagon"],
            },
        },
        "laion": {
            "format": "laion_parquet",
            "n_images": 4000,
            "caption_style": "alt_text",
            "seed": 2,
            "holdout": {
                "bindings": [
                    ["blue", "star"],
                    ["blue", "triangle"],
                    ["yellow", "star"],
                    ["yellow", "triangle"],
                ],
                "triples": [["star", "left of", "cross"]],
                "atoms": ["pink"],
            },
        },
    },
}
