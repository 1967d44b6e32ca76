"""The refinement figure as a reader sees it: it fits a page, its colour bar gives the counts,
every panel names its scorers, stage and group, and no text runs into another."""

from itertools import combinations

import numpy as np
import pytest
from PIL import Image

from tests.unit.test_refine import synthetic_pairs
from vlcomp.figure_files import DPI, plt
from vlcomp.refine import figures
from vlcomp.refine.figures import PAGE_IN, count_ticks, gap_grid, plot_refinement_gaps
from vlcomp.refine.refinement import refine_candidates
from vlcomp.vocabulary import FAMILIES, TARGETS

TYPES = [(family, target) for family in FAMILIES for target in TARGETS]


def _refined(groups: int | list[tuple[str, str]], n: int = 60, **kwargs):
    types = TYPES[:groups] if isinstance(groups, int) else groups
    cands, scores = synthetic_pairs(n, seed=4, groups=types)
    return refine_candidates(cands, scores, ("s1", "s2"), **kwargs)


@pytest.fixture()
def drawn(monkeypatch):
    """plot_refinement_gaps(...) -> its figure, drawn and not saved (closed afterwards)."""
    figs = []
    monkeypatch.setattr(figures, "save_figure", lambda fig, png, pdf: figs.append(fig))

    def draw(result, names=("tiny_gpt2", "minilm")):
        plot_refinement_gaps(result.items, "unused.png", "unused.pdf", names, counts=result.counts)
        figs[-1].draw_without_rendering()
        return figs[-1]

    yield draw
    for fig in figs:
        plt.close(fig)


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def test_count_ticks_label_counts_up_to_the_largest():
    assert count_ticks(2) == [1, 2]
    assert count_ticks(3) == [1, 2, 3]
    assert count_ticks(22) == [1, 2, 5, 10, 20]  # 22 is too close to 20 for its own label
    assert count_ticks(37) == [1, 2, 5, 10, 20, 37]
    assert count_ticks(1000) == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]


@pytest.mark.parametrize("groups", range(1, 16))
def test_gap_grid_fits_a_page(groups):
    rows, per_row, side = gap_grid(groups)
    assert rows * per_row >= groups and (rows - 1) * per_row < groups
    pad_w, pad_h = figures.GAP_PANEL_PAD_IN
    assert 2 * per_row * (side + pad_w) + figures.GAP_MARGIN_IN <= PAGE_IN[0] + 1e-9
    assert rows * (side + pad_h) + figures.GAP_HEAD_IN <= PAGE_IN[1] + 1e-9
    assert side >= figures.GAP_PANEL_MIN_IN


def test_more_groups_than_a_page_holds_keep_readable_panels():
    rows, per_row, side = gap_grid(18)
    assert (rows, per_row, side) == (6, 3, figures.GAP_PANEL_MIN_IN)


def test_saved_figure_fits_a_page_with_a_colour_bar_of_counts(tmp_path):
    result = _refined(7, n=300)
    png, pdf = tmp_path / "g.png", tmp_path / "g.pdf"
    plot_refinement_gaps(result.items, png, pdf, ("s1", "s2"), counts=result.counts)
    width, height = Image.open(png).size
    assert width / DPI <= PAGE_IN[0] and height / DPI <= PAGE_IN[1]
    first = (png.read_bytes(), pdf.read_bytes())
    plot_refinement_gaps(result.items, png, pdf, ("s1", "s2"), counts=result.counts)
    assert first == (png.read_bytes(), pdf.read_bytes())


def test_colour_bar_spans_the_fullest_cell(drawn):
    result = _refined(2, n=300)
    fig = drawn(result)
    bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars) == 1
    bar = bars[0]
    assert "pairs per cell" in bar.get_xlabel()
    meshes = [c for ax in _panels(fig) for c in ax.collections]
    fullest = max(float(np.ma.max(mesh.get_array())) for mesh in meshes)
    assert {mesh.norm for mesh in meshes} == {meshes[0].norm}  # one scale for every panel
    assert meshes[0].norm.vmin == 1 and meshes[0].norm.vmax == fullest
    labels = [t.get_text() for t in bar.get_xticklabels()]
    assert labels[0] == "1" and labels == [f"{t:g}" for t in count_ticks(fullest)]


def test_every_panel_names_its_scorers_stage_and_group(drawn):
    types = [("swap", "att"), ("add", "obj"), ("replace", "rel")]
    fig = drawn(_refined(types), ("tiny_gpt2", "minilm"))
    panels = _panels(fig)
    assert len(panels) == 6
    for k, (family, target) in enumerate(sorted(types)):
        for ax, stage in zip(panels[2 * k : 2 * k + 2], ["before", "after"], strict=True):
            assert ax.get_xlabel() == "tiny_gpt2 gap" and ax.get_ylabel() == "minilm gap"
            group, head, first, second = ax.get_title().splitlines()
            assert group == f"{family} / {target}" and head.startswith(f"{stage}, n=")
            assert first.startswith("tiny_gpt2 ") and second.startswith("minilm ")
    # the benchmark, the same in every group, is named once, in the figure's title
    title = fig.get_suptitle().replace("\n", " ")
    assert "of bench:" in title and "tiny_gpt2 (x) and minilm (y)" in title
    assert all("bench" not in ax.get_title() for ax in panels)


def test_title_counts_match_the_items(drawn):
    result = _refined(1, n=200)
    fig = drawn(result)
    before, after = _panels(fig)
    items = result.items
    kept = items.filter("kept")
    assert f"before, n={items.height}" in before.get_title()
    assert f"after, n={kept.height}" in after.get_title()
    share = (items["gap_1"] > 0).sum() / (items["gap_1"] != 0).sum()
    assert f"tiny_gpt2 {share:.2f} (" in before.get_title()
    assert "tiny_gpt2 0.50 (0 ties)" in after.get_title()  # refinement balances the gaps


def test_a_group_that_kept_nothing_says_why_and_shows_no_share(drawn):
    result = _refined(1, n=30, grid=100)
    fig = drawn(result)
    _, after = _panels(fig)
    assert "after, n=0" in after.get_title() and "tiny_gpt2 n/a (0 ties)" in after.get_title()
    why = " ".join(t.get_text() for t in after.texts).replace("\n", " ")
    assert "refinement kept 0 of 30" in why and "refine.grid" in why


@pytest.mark.parametrize("groups", [1, 4, 7, 9, 15])
def test_no_text_overlaps_or_leaves_the_figure(drawn, groups):
    fig = drawn(_refined(groups, n=30))
    renderer = fig.canvas.get_renderer()
    texts = [fig._suptitle, fig._supxlabel]
    for ax in _panels(fig):
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
    boxes = [t.get_window_extent(renderer) for t in texts]
    for ax in _panels(fig):
        boxes.append(ax.get_window_extent(renderer))  # titles and labels sit outside it
    clashes = [(i, j) for (i, a), (j, b) in combinations(enumerate(boxes), 2) if a.overlaps(b)]
    assert clashes == []
    page = fig.bbox
    assert all(page.x0 <= b.x0 and b.x1 <= page.x1 and page.y0 <= b.y0 and b.y1 <= page.y1
               for b in boxes)  # fmt: skip


def test_a_column_shared_by_every_group_moves_to_the_figure_title(drawn):
    fig = drawn(_refined([("atom", "obj"), ("atom", "att")]))
    assert "of bench / atom:" in fig.get_suptitle().replace("\n", " ")
    assert [ax.get_title().splitlines()[0] for ax in _panels(fig)] == ["att"] * 2 + ["obj"] * 2
