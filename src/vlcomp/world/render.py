"""Drawing scenes with PIL.

Shapes are drawn at ``SUPERSAMPLE`` times the target resolution and reduced with a
box filter, which gives anti-aliased edges deterministically. Every shape fills its
square box in both directions, so the box written to the annotations is tight.
"""

from __future__ import annotations

import io
import math
from functools import cache
from pathlib import Path

from PIL import Image, ImageDraw

from .scenes import Scene, SceneObject
from .vocab import BACKGROUND_RGB, COLOUR_RGB

SUPERSAMPLE = 4
PNG_COMPRESS_LEVEL = 6

Points = tuple[tuple[float, float], ...]


def _normalise(points: list[tuple[float, float]]) -> Points:
    """Scale a polygon so that its bounding box is exactly [-1, 1] x [-1, 1]."""
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    return tuple((2 * (x - x0) / (x1 - x0) - 1, 2 * (y - y0) / (y1 - y0) - 1) for x, y in points)


def _regular(n: int, phase: float, radii: tuple[float, ...] = (1.0,)) -> list[tuple[float, float]]:
    pts = []
    for k in range(n * len(radii)):
        r = radii[k % len(radii)]
        a = phase + 2 * math.pi * k / (n * len(radii))
        pts.append((r * math.cos(a), r * math.sin(a)))
    return pts


def _cross(t: float = 0.34) -> list[tuple[float, float]]:
    return [
        (-t, -1), (t, -1), (t, -t), (1, -t), (1, t), (t, t),
        (t, 1), (-t, 1), (-t, t), (-1, t), (-1, -t), (-t, -t),
    ]  # fmt: skip


def _heart(n: int = 48) -> list[tuple[float, float]]:
    pts = []
    for k in range(n):
        t = 2 * math.pi * k / n
        x = 16 * math.sin(t) ** 3
        y = 13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t)
        pts.append((x, -y))  # image y grows downward
    return pts


@cache
def shape_polygon(shape: str) -> Points | None:
    """Unit polygon of a shape in [-1, 1]^2 (None for the circle, drawn as an ellipse)."""
    up = -math.pi / 2
    table = {
        "circle": None,
        "square": [(-1, -1), (1, -1), (1, 1), (-1, 1)],
        "triangle": [(0, -1), (1, 1), (-1, 1)],
        "star": _regular(5, up, (1.0, 0.42)),
        "cross": _cross(),
        "diamond": [(0, -1), (1, 0), (0, 1), (-1, 0)],
        "heart": _heart(),
        "hexagon": _regular(6, 0.0),
    }
    if shape not in table:
        raise ValueError(f"no drawing for shape {shape!r}")
    pts = table[shape]
    return None if pts is None else _normalise(pts)


def _draw_object(draw: ImageDraw.ImageDraw, obj: SceneObject, k: int) -> None:
    colour = COLOUR_RGB[obj.colour]
    x0, y0 = obj.x * k, obj.y * k
    extent = obj.side * k - 1
    poly = shape_polygon(obj.shape)
    if poly is None:
        draw.ellipse([x0, y0, x0 + extent, y0 + extent], fill=colour)
        return
    half = extent / 2
    draw.polygon([(x0 + (u + 1) * half, y0 + (v + 1) * half) for u, v in poly], fill=colour)


def render_scene(scene: Scene, image_size: int) -> Image.Image:
    """RGB image of ``scene`` on the light-grey background."""
    k = SUPERSAMPLE
    big = Image.new("RGB", (image_size * k, image_size * k), BACKGROUND_RGB)
    draw = ImageDraw.Draw(big)
    for obj in scene.objects:
        _draw_object(draw, obj, k)
    return big.reduce(k)


def png_bytes(image: Image.Image) -> bytes:
    """PNG encoding with fixed settings and no metadata chunks (no timestamps)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return buf.getvalue()


def write_png(scene: Scene, image_size: int, path: Path) -> None:
    """Render ``scene`` and write it as PNG to ``path`` (the caller makes it atomic)."""
    path.write_bytes(png_bytes(render_scene(scene, image_size)))
