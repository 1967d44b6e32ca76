"""Mirror augmentation (``train.mirror``): pairs mirrored at random along the image axes, their
spatial words rewritten to match, and mirrored hard negative images."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from vlcomp.negatives.lexicon import HORIZONTAL, VERTICAL, mirror_text, relation_axis

# The tensor dim an axis flips in a (..., C, H, W) image batch: columns, rows.
FLIP_DIM = {HORIZONTAL: -1, VERTICAL: -2}


class Mirroring:
    """Seeded mirroring of each step's pairs along ``axes`` (``TrainSettings.mirror``).

    Each pair is mirrored along each axis with probability 1/2, its caption and hard
    negatives rewritten to match (``lexicon.mirror_text``: "left" <-> "right", "above" ->
    "below", ...; a relation negative along a mirrored axis becomes the caption itself,
    ``_mirrored_negative``). A pair one of whose hard negatives changes a spatial relation along an
    axis also brings its (possibly mirrored) image mirrored along that axis as a hard
    negative *image* for its caption: every relation along that axis turns into its
    converse there, and the generator keeps a relation negative only where the converse
    is false of the image, so the caption is false of the mirrored image. Both word
    priors and bags of words are then useless against it: only where things are tells
    the two images apart.

    The token tables (``text_tokens``: combo x pair; ``negative_tokens``: combo x negative
    row) are built on the CPU; ``to`` moves them to a device. The draws are always on the CPU.
    """

    def __init__(
        self,
        axes: Sequence[str],
        texts: Sequence[str],
        negatives: Sequence[Sequence[str]] | None,
        tokenizer: Callable[[list[str]], torch.Tensor],
        seed: int,
    ) -> None:
        self.axes = tuple(axes)
        self.combos = [
            tuple(a for k, a in enumerate(self.axes) if mask >> k & 1)
            for mask in range(2 ** len(self.axes))
        ]
        self.text_tokens = torch.stack(
            [tokenizer([self._mirrored(t, combo) for t in texts]) for combo in self.combos]
        )
        self.hard_axis: list[str | None] = [None] * len(texts)
        self.negative_tokens = torch.empty(0, dtype=torch.long)
        if negatives is not None:
            flat = [
                (text, option, relation_axis(text, option))
                for text, options in zip(texts, negatives, strict=True)
                for option in options
            ]
            if flat:
                self.negative_tokens = torch.stack(
                    [
                        tokenizer([self._mirrored_negative(*row, combo) for row in flat])
                        for combo in self.combos
                    ]
                )
            for row, (text, options) in enumerate(zip(texts, negatives, strict=True)):
                found = (relation_axis(text, option) for option in options)
                self.hard_axis[row] = next((a for a in found if a in self.axes), None)
        self.rng = np.random.default_rng([seed, 2])

    def to(self, device: torch.device | str) -> Mirroring:
        """Moves the token tables to ``device``; returns self."""
        self.text_tokens = self.text_tokens.to(device)
        self.negative_tokens = self.negative_tokens.to(device)
        return self

    @classmethod
    def _mirrored_negative(
        cls, text: str, negative: str, axis: str | None, combo: tuple[str, ...]
    ) -> str:
        """A negative of the pair mirrored by ``combo``. One that changes a relation along a
        mirrored axis becomes the caption itself, mirrored along the other axes only: false
        of the mirrored image, and the pair's two texts trade places ("beneath" against
        "above" becomes "above" against "beneath"), so that no word is more often the
        positive than the negative. Mirroring the negative's words instead would keep a
        prior wherever the generator's converses are not each other's ("beneath" ->
        "above" -> "below")."""
        if axis is not None and axis in combo:
            return cls._mirrored(text, tuple(a for a in combo if a != axis))
        return cls._mirrored(negative, combo)

    @staticmethod
    def _mirrored(text: str, combo: tuple[str, ...]) -> str:
        for axis in combo:
            text = mirror_text(text, axis)
        return text

    def draw(self, n: int) -> torch.Tensor:
        """The mirroring (an index into ``combos``) of each of a step's ``n`` pairs (CPU)."""
        return torch.from_numpy(self.rng.integers(len(self.combos), size=n))

    def images(self, images: torch.Tensor, drawn: torch.Tensor) -> torch.Tensor:
        """A step's ``images`` (B x C x H x W), each mirrored as ``drawn``."""
        drawn = drawn.to(images.device)
        for k, axis in enumerate(self.axes):
            mask = ((drawn >> k) & 1).bool().view(-1, 1, 1, 1)
            images = torch.where(mask, images.flip(FLIP_DIM[axis]), images)
        return images

    def texts(self, drawn: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """The tokens of a step's captions (pairs ``idx``), each mirrored as ``drawn``."""
        device = self.text_tokens.device
        return self.text_tokens[drawn.to(device), idx.to(device)]

    def picked_negative_tokens(
        self, pair_rows: Sequence[Sequence[int]], picked: Sequence[int], drawn: torch.Tensor
    ) -> torch.Tensor:
        """The tokens of a step's ``picked`` negative rows, each mirrored as its pair was
        (``pair_rows``: each pair's negative rows, in batch order, as ``drawn``)."""
        row_drawn = {r: int(drawn[j]) for j, rows in enumerate(pair_rows) for r in rows}
        device = self.negative_tokens.device
        return self.negative_tokens[
            torch.tensor([row_drawn[r] for r in picked], dtype=torch.long, device=device),
            torch.tensor(picked, dtype=torch.long, device=device),
        ]

    def hard_images(self, images: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """The hard negative images of a step's (mirrored) ``images``, of those pairs that
        have one, in batch order."""
        axes = [self.hard_axis[i] for i in idx.tolist()]
        keep = [j for j, axis in enumerate(axes) if axis is not None]
        chosen = images[keep]
        horizontal = torch.tensor([axes[j] == HORIZONTAL for j in keep], device=images.device).view(
            -1, 1, 1, 1
        )
        return torch.where(
            horizontal, chosen.flip(FLIP_DIM[HORIZONTAL]), chosen.flip(FLIP_DIM[VERTICAL])
        )
