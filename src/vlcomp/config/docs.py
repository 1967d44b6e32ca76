"""The configuration reference, config/README.md (``python -m vlcomp.config``): every key of
the schema with its type, default and meaning, then the corpus formats (from the format
registry) and the legend of split labels."""

from __future__ import annotations

import json
from typing import Any

from vlcomp.config.schema import load_schema, resolve_ref


def _doc_rows(schema: dict[str, Any], root: dict[str, Any], prefix: str) -> list[str]:
    schema = resolve_ref(schema, root)
    rows = []
    for key, sub in schema.get("properties", {}).items():
        sub = resolve_ref(sub, root)
        path = f"{prefix}.{key}" if prefix else key
        kind = sub.get("type", "enum" if "enum" in sub else "")
        if "enum" in sub:
            kind = " \\| ".join(f"`{v}`" for v in sub["enum"])
        default = (
            f"`{json.dumps(sub['default'])}`"
            if "default" in sub
            else "required"
            if key in schema.get("required", [])
            else ""
        )
        text = " ".join(str(sub.get("description", "")).split())
        rows.append(f"| `{path}` | {kind} | {default} | {text} |")
        rows += _doc_rows(sub, root, path)
        extra = sub.get("additionalProperties")
        if isinstance(extra, dict):
            rows += _doc_rows(extra, root, f"{path}.<name>")
    return rows


FORMATS_BEGIN = (
    "<!-- corpus formats: rendered from the format registry (vlcomp.ingest.readers.FORMATS) "
    "by vlcomp.ingest.job.format_docs; a test fails when they differ -->"
)
FORMATS_END = "<!-- end of corpus formats -->"

# (label, where it appears, meaning): the legend of config/README.md. A test checks that it
# names every label the split assignment and the image index write.
SPLIT_LABELS: tuple[tuple[str, str, str], ...] = (
    (
        "`SC`",
        "CREPE split of an item, per training corpus",
        "Seen Compounds: every atom and every compound of the item's scene graph occurs in "
        "the corpus (in at least `splits.min_count` captions).",
    ),
    (
        "`UC`",
        "CREPE split",
        "Unseen Compounds: every atom is seen, at least one compound (attribute-object or "
        "object-relation-object) is not.",
    ),
    ("`UA`", "CREPE split", "Unseen Atoms: some object, attribute or relation is not seen."),
    (
        "`no_compound`",
        "CREPE split",
        "The item has no compound, so no split (CREPE's sets hold only items with one).",
    ),
    (
        "`perfect`",
        "BindSplit label of one attribute-object binding",
        "The corpus has this attribute on this object as a phrase of its own (object "
        "lemmatised, attribute case-folded).",
    ),
    ("`close`", "BindSplit binding label", "Seen only inside a longer attributive phrase."),
    ("`none`", "BindSplit binding label", "Not seen at all."),
    (
        "`perfect`, `close`, `none`, `perfect+close`, `perfect+none`, `close+none`, "
        "`perfect+close+none`",
        "BindSplit bucket of a sample (a positive text with its attribute-swapped negatives)",
        "The labels that occur among the sample's bindings.",
    ),
    (
        "`seen`, `mixed`, `unseen`",
        "BindSplit split of a sample, under a rule",
        "Every binding of the sample counts as seen under the rule / some do / none does.",
    ),
    ("`strict` (STRICT)", "BindSplit rule", "Only `perfect` counts as seen."),
    ("`loose` (LOOSE)", "BindSplit rule", "`perfect` and `close` count as seen."),
    (
        "`no_binding`",
        "BindSplit",
        "The text has no attribute-object binding: no bucket and no split.",
    ),
    (
        "`excluded` (`missing`, `unreadable`)",
        "any benchmark, per model (`results/metrics/<model>/<benchmark>_excluded.parquet`)",
        "The item's image is missing or cannot be decoded (its status in the image index): "
        "the item is not evaluated, and counted.",
    ),
)


def _appendix() -> list[str]:
    from vlcomp.ingest.job import format_docs

    return [
        "",
        "## Corpus formats and their options",
        "",
        "`corpora.<name>.format` says how the files of `corpora.<name>.inputs` are read and",
        "`corpora.<name>.options` sets that format's options (any other key is an error",
        "before any job runs). A file key is the file name without its suffixes.",
        "",
        FORMATS_BEGIN,
        format_docs().rstrip("\n"),
        FORMATS_END,
        "",
        "## Split labels",
        "",
        "The labels the split tables, metric tables and figures use (`splits.min_count` sets",
        "how many captions make a unit seen).",
        "",
        "| label | where | meaning |",
        "|---|---|---|",
        *(f"| {label} | {where} | {meaning} |" for label, where, meaning in SPLIT_LABELS),
    ]


def config_docs() -> str:
    """Markdown reference of every key, generated from the schema (config/README.md), then
    the corpus formats (from the format registry) and the legend of split labels."""
    schema = load_schema()
    header = [
        "# Configuration reference",
        "",
        "Generated from `src/vlcomp/schemas/config.schema.yaml` by",
        "`python -m vlcomp.config > config/README.md`; a test keeps it in sync.",
        "`config/config.yaml` is the embedded default (the synthetic world). A file given",
        "with `--configfile` replaces it (presets for real data: `config/presets/`, see",
        "`config/presets/README.md`). Unknown keys are errors; a key with a default may be",
        "left out. A model needs exactly one of `pretrained`, `checkpoint` or `train`.",
        "Paths under `results/` are produced by the workflow and not checked up front.",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
    ]
    return "\n".join(header + _doc_rows(schema, schema, "") + _appendix()) + "\n"
