"""The published benchmark formats vlcomp imports, in one place.

Each entry gives the format's reader (one file at a time), its importer options (the eval
set's ``options``) with their defaults, its shape (how it is evaluated), the metrics its
authors report with their chance levels, and where the published files come from.

Shapes:

- ``candidates``: 1+N candidate sets in ``CANDIDATES_SCHEMA``, one image, one positive text
  first, then the negatives; ranked like every candidate set (``accuracy`` for pairs, R@K
  otherwise).
- ``two_positives``: one image, two positives and a negative (SugarCrepe++; ITT and TOT).
- ``two_images``: two images and two captions, caption i describing image i
  (``TWO_IMAGE_SCHEMA``; Winoground's text, image and group scores).
- ``image_selection``: one caption, the image it describes and a negative image
  (``IMAGE_SELECTION_SCHEMA``; SVO-Probes): the caption must score its own image strictly
  higher (image-selection accuracy).

A format's authors' metric is named as vlcomp's metric tables name it. Every evaluation here
counts a tie as wrong, whatever the authors' code did with one. Chance levels are the
expectation under i.i.d. continuous scores; None means 1 / the item's number of candidates
(the evaluation's chance rows hold the value per item).

``vlcomp.config`` (the config's format lists) and ``importers/jobs.py`` read the lists from
here; a test checks the chance levels against the evaluation's own constants. The job calls
``reader(path, benchmark=..., on_error="reject", **options)``, except for aro and crepe_csv,
whose readers take what the job works out per file (the ARO task, the CREPE columns).

Image-selection items share the two-image path: the same import job and image index
(``image_0`` / ``image_1``), the same image embedding (``evaluate.two_image``), their own
comparison and metric.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from vlcomp.importers.aro import SYMMETRIC_RELATIONS, read_aro_file
from vlcomp.importers.bivlc import read_bivlc_file
from vlcomp.importers.cola import read_cola_file
from vlcomp.importers.colorswap import read_colorswap_file
from vlcomp.importers.crepe import read_crepe_csv
from vlcomp.importers.eqben import read_eqben_file
from vlcomp.importers.mmvp import TEXT_PREFIX, read_mmvp_file
from vlcomp.importers.sugarcrepe import read_sugarcrepe_file
from vlcomp.importers.sugarcrepe_pp import read_sugarcrepe_pp_file
from vlcomp.importers.svo_probes import IMAGE_NAME, read_svo_probes_file
from vlcomp.importers.valse import read_valse_file
from vlcomp.importers.vismin import read_vismin_file
from vlcomp.importers.vl_checklist import MAX_NUM as VL_CHECKLIST_MAX_NUM
from vlcomp.importers.vl_checklist import read_vl_checklist_file
from vlcomp.importers.winoground import read_winoground_file

Shape = Literal["candidates", "two_positives", "two_images", "image_selection"]
CANDIDATES: Shape = "candidates"
TWO_POSITIVES: Shape = "two_positives"
TWO_IMAGES: Shape = "two_images"
IMAGE_SELECTION: Shape = "image_selection"


@dataclass(frozen=True)
class Metric:
    name: str  # as vlcomp's metric tables name it
    definition: str  # what the authors' evaluation computes
    chance: float | None  # None: 1 / the item's number of candidates


@dataclass(frozen=True)
class BenchmarkFormat:
    shape: Shape
    reader: Callable[..., Any]  # one file -> Imported (candidates) or TwoImageImported
    doc: str  # what the files are (config docs)
    source: str  # where the published files and the code that reads them come from
    metrics: tuple[Metric, ...]  # the authors' metrics, the headline first
    options: Mapping[str, Any] = field(default_factory=dict)  # importer option -> default
    option_docs: Mapping[str, str] = field(default_factory=dict)  # one per option
    positives: int = 1  # positive texts per item (candidate shapes)

    @property
    def headline(self) -> Metric:
        return self.metrics[0]


_TEXT = "text_score"
_IMAGE = "image_score"
_GROUP = "group_score"
_WINOGROUND_DEFINITIONS = {
    _TEXT: "each image scores its own caption strictly above the other caption",
    _IMAGE: "each caption scores its own image strictly above the other image",
    _GROUP: "text and image score both right",
}
_WINOGROUND_CHANCE = {_TEXT: 0.25, _IMAGE: 0.25, _GROUP: 1.0 / 6.0}


def _winoground(*names: str, note: str = "") -> tuple[Metric, ...]:
    return tuple(
        Metric(name, _WINOGROUND_DEFINITIONS[name] + note, _WINOGROUND_CHANCE[name])
        for name in names
    )


def _pair(definition: str) -> Metric:
    """The metric of 1+1 candidate sets (vlcomp's pair accuracy)."""
    return Metric("accuracy", definition, 0.5)


FORMATS: dict[str, BenchmarkFormat] = {
    "sugarcrepe": BenchmarkFormat(
        CANDIDATES,
        read_sugarcrepe_file,
        doc="SugarCrepe `<type>.json` files (add_att, replace_obj, swap_obj, ...) or a folder of "
        "them: the release's `data/` (refined) or `data_unrefined/` (unrefined), or copies named "
        "`refined/` / `unrefined/`; not their parent.",
        source="RAIVNLab/sugar-crepe@0047054 (data/, main_eval.py)",
        metrics=(_pair("the positive caption strictly above the negative (main_eval.py)"),),
    ),
    "sugarcrepe_pp": BenchmarkFormat(
        TWO_POSITIVES,
        read_sugarcrepe_pp_file,
        doc="SugarCrepe++ `<subset>.json` files (replace_att, replace_obj, replace_rel, "
        "swap_att, swap_obj) or a folder of them; two positives per item.",
        source="Sri-Harsha/scpp@c083bbf (data/, VLMs/test_*.py)",
        metrics=(
            Metric(
                "itt_accuracy",
                "both positives strictly above the negative for the image",
                1.0 / 3.0,
            ),
            Metric(
                "tot_accuracy",
                "the two positives closer to each other than either is to "
                "the negative (text embeddings)",
                1.0 / 3.0,
            ),
        ),
        positives=2,
    ),
    "aro": BenchmarkFormat(
        CANDIDATES,
        read_aro_file,
        doc="ARO `visual_genome_relation.json`, `visual_genome_attribution.json`, "
        "`coco_order.json`, `flickr30k_order.json` (or other names mapped in `tasks`).",
        source="mertyg/vision-language-models-are-bows@81fdd20 (dataset_zoo/aro_datasets.py)",
        metrics=(
            _pair(
                "VG-Relation / VG-Attribution: the true caption above the false one; the "
                "paper macro-averages over relations (less the 157 its notebook leaves out) / "
                "attribute pairs (with 25 items or more): importers.aro.aro_macro_accuracy"
            ),
            Metric("R@1", "COCO-Order / Flickr30k-Order: the true caption first of five", 0.2),
        ),
        options={
            "tasks": {},
            "drop_symmetric": False,
            "symmetric_relations": list(SYMMETRIC_RELATIONS),
        },
        option_docs={
            "tasks": "File name (or stem) -> task (vg_relation, vg_attribution, coco_order, "
            "flickr30k_order) for files not named as released.",
            "drop_symmetric": "Reject VG-Relation items whose relation is symmetric (the "
            "swapped caption is still true); false reports and keeps them.",
            "symmetric_relations": "The VG-Relation relations counted as symmetric (matched "
            "on the whole name, ignoring case).",
        },
    ),
    "crepe_csv": BenchmarkFormat(
        CANDIDATES,
        read_crepe_csv,
        doc="CREPE hard-negative CSVs (`syst_vg_hard_negs_<split>_in_<corpus>.csv`, "
        "`prod_vg_hard_negs_<type>_complexity_<n>.csv`) or folders of them: the release's "
        "`syst_hard_negatives/`, or `prod_hard_negatives/` with its `atom/`, `negate/`, `swap/` "
        "subfolders.",
        source="RAIVNLab/CREPE@1fa81c4 (crepe_eval_utils.py, crepe_prod_eval_clip.py)",
        metrics=(Metric("R@1", "the caption ranked first among it and its hard negatives", None),),
        options={"kinds": ["atom", "comp"]},
        option_docs={"kinds": "Systematicity hard-negative columns read (atom, comp, combined)."},
    ),
    "winoground": BenchmarkFormat(
        TWO_IMAGES,
        read_winoground_file,
        doc="Winoground `examples.jsonl` or the folder holding it; images are file stems "
        "(`<stem>.png`).",
        source="facebook/winoground dataset card",
        metrics=_winoground(_TEXT, _IMAGE, _GROUP),
    ),
    "bivlc": BenchmarkFormat(
        TWO_IMAGES,
        read_bivlc_file,
        doc="BiVLC exports with image file names (JSON, JSON Lines, CSV, Parquet): `image, "
        "caption, negative_image, negative_caption, type, subtype`.",
        source="IMirandaM/BiVLC@84f0d17 (README, main_evaluation_BiVLC.py)",
        metrics=_winoground(_TEXT, _IMAGE, _GROUP, note=" (BiVLC's I2T, T2I, Group)"),
    ),
    "vismin": BenchmarkFormat(
        TWO_IMAGES,
        read_vismin_file,
        doc="VisMin bench exports with image file names: `image_0, text_0, image_1, text_1, "
        "category`.",
        source="rabiulcste/vismin@29ce2c0 (evals/), mair-lab/vismin-bench",
        metrics=_winoground(_TEXT, _IMAGE, _GROUP),
    ),
    "valse": BenchmarkFormat(
        CANDIDATES,
        read_valse_file,
        doc="VALSE instrument files (`existence.json`, `counting-hard.json`, "
        "`actant-swap.json`, ...: objects keyed by sample id) or a folder of them; the "
        "caption against its foil.",
        source="Heidelberg-NLP/VALSE@2152d90 (data/, README, lxmert_valse_eval.py)",
        metrics=(
            _pair(
                "pairwise ranking accuracy acc_r: the caption strictly above the "
                "foil, on the validated samples"
            ),
        ),
        options={"validated_only": True, "image_folders": {}},
        option_docs={
            "validated_only": "Only the validated samples (mturk caption votes >= 2, the "
            "README's valid set, which the authors score); the others are rejected rows.",
            "image_folders": "Record `dataset` (visual7w, SWiG, VisDial_v1.0, FOIL dataset, "
            "coco2017, coco_2017) -> folder under the images folder its `image_file` is in "
            "({}: the file name as given).",
        },
    ),
    "vl_checklist": BenchmarkFormat(
        CANDIDATES,
        read_vl_checklist_file,
        doc="VL-CheckList corpus YAMLs (`corpus/v1/<Type>/.../<corpus>.yaml`, naming their "
        "`data/` JSON and image root) or `data/` JSON files, or folders of them; the first "
        "positive text against the first negative.",
        source="om-ai-lab/VL-CheckList@6f8d6a3 (corpus/, data/, vl_checklist/evaluate.py, "
        "configs/sample.yaml)",
        metrics=(
            _pair(
                "ITC accuracy: the first positive text's probability strictly above "
                "the first negative's, per corpus (protocol authors: its first MAX_NUM / 2 "
                "entries, equal texts kept as ties)"
            ),
        ),
        options={"protocol": "vlcomp", "max_num": VL_CHECKLIST_MAX_NUM},
        option_docs={
            "protocol": "vlcomp: every entry, entries whose first negative equals their first "
            "positive rejected; authors: as vl_checklist/evaluate.py (task itc) scores, the "
            "first max_num / 2 entries of each corpus, equal texts kept (a tie, counted wrong).",
            "max_num": "protocol authors: the authors' MAX_NUM (2000 in their sample config); "
            "each corpus keeps its first int(max_num / 2) entries, 0 keeps all.",
        },
    ),
    "cola": BenchmarkFormat(
        TWO_IMAGES,
        read_cola_file,
        doc="COLA multi-object `COLA_multiobjects_matching_benchmark.json` (`[image 1, "
        "caption 1, image 2, caption 2]`; image URLs become their file names).",
        source="arijitray1993/COLA@1fa52fb (data/, scripts/eval.py ColaMultiObjAcc)",
        metrics=_winoground(_IMAGE, note=" (ColaMultiObjAcc)"),
    ),
    "colorswap": BenchmarkFormat(
        TWO_IMAGES,
        read_colorswap_file,
        doc="ColorSwap `test.json` / `train.json` (`id, caption_1, caption_2, image_1, "
        "image_2, image_source, caption_source`) or exports of the hub copy.",
        source="Top34051/colorswap@4f2c9e4 (README, vlm_eval.py)",
        metrics=_winoground(_TEXT, _IMAGE, _GROUP),
    ),
    "mmvp_vlm": BenchmarkFormat(
        TWO_IMAGES,
        read_mmvp_file,
        doc="MMVP-VLM `Questions.csv` (`Question ID, Type, Statement`; consecutive rows are "
        "a pair, images `<Type>/<id>.jpg` under `MLLM_VLM Images`) or the folder holding it.",
        source="tsb0601/MMVP@7635005 (README, scripts/evaluate_vlm.py)",
        metrics=_winoground(_IMAGE, note=" (evaluate_vlm.py; reported per visual pattern)"),
        options={"text_prefix": TEXT_PREFIX},
        option_docs={
            "text_prefix": "Put before every statement (the authors' script "
            "scores `a photo of <statement>`)."
        },
    ),
    "eqben": BenchmarkFormat(
        TWO_IMAGES,
        read_eqben_file,
        doc="EqBen annotations in pairs: the Winoground-style list (`image0, caption0, "
        "image1, caption1`; the released subset) or the per-subset `{video: [pairs]}` / "
        "`{video: {subject: [pairs]}}` files, or a folder of them.",
        source="Wangt-CN/EqBen@ab6c79a (src/eqben/eqben_utils.py, eqben_acc.py)",
        metrics=_winoground(_TEXT, _IMAGE, _GROUP, note=" (per subset)"),
    ),
    "svo_probes": BenchmarkFormat(
        IMAGE_SELECTION,
        read_svo_probes_file,
        doc="SVO-Probes `svo_probes.csv` (`sentence, pos_triplet, neg_triplet, subj_neg, "
        "verb_neg, obj_neg, pos_image_id, neg_image_id, pos_url, neg_url`): one sentence, its "
        "image and a negative image differing in the subject, verb or object.",
        source="deepmind/svo_probes@206219e (README, probing_image_text_models.ipynb)",
        metrics=(
            Metric(
                "accuracy",
                "image selection: the sentence scores its own image strictly above the "
                "negative image, per negative type (subject, verb, object; the Colab's rows "
                "with exactly one flag) and over all. The Colab averages a match "
                "classifier's accuracy on the positive and on the negative pairs; a "
                "similarity without a threshold is compared pairwise instead",
                0.5,
            ),
        ),
        options={"image_name": IMAGE_NAME},
        option_docs={
            "image_name": "File name of an image under the images folder: `{image_id}` "
            "(the pos/neg_image_id) and `{url_name}` (the file name of its URL) are filled in."
        },
    ),
}


def formats_of(*shapes: Shape) -> tuple[str, ...]:
    """The format names of these shapes, in registry order."""
    return tuple(name for name, spec in FORMATS.items() if spec.shape in shapes)


def options_of(fmt: str, source: Mapping[str, Any]) -> dict[str, Any]:
    """The format's options: the source's value, else the default."""
    return {key: source.get(key, default) for key, default in FORMATS[fmt].options.items()}
