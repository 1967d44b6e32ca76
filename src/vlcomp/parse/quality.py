"""Parser quality against gold scene graphs (like CREPE's Table 2), side by side with
``sng_parser`` (vacancy's SceneGraphParser, the rule-based spaCy parser of earlier work).

Gold sets per caption, compared as sets (micro-averaged over captions: precision =
sum |gold & pred| / sum |pred|, recall = sum |gold & pred| / sum |gold|):

- ``object``: object lemma; ``attribute``: attribute value; ``attribute_pair``:
  (object lemma, value); ``relation``: predicate; ``triplet``: (subject lemma, predicate,
  object lemma).
- Matching ``exact``: lower-cased, whitespace-collapsed strings; an object's key is its
  name with the last word lemmatised by one shared context-free noun lemmatiser (the
  same for gold and every parser, so no parser gains from its own lemmatiser; the world's
  gold uses its own lemma column). Predicates of gold and parsers both pass through the
  dataset's predicate map (generic for FACTUAL: "on the side of" = "on side of"; the
  world's map for the world). ``head``: the same, with objects and attribute values cut
  to their last word ("fire hydrant" = "hydrant", "dark green" = "green").
- FACTUAL (Visual Genome region captions, ACL Findings 2023): triples ``( s , p , o )``;
  ``p == "is"`` is an attribute; lone ``( x )`` is an object.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from vlcomp.io import atomic_path, write_parquet
from vlcomp.text import normalise
from vlcomp.text.lemma import Lemmatizer

from .backends import DEFAULT_SPACY_MODEL
from .parser import CaptionParser, make_options
from .predicates import PredicateMap, resolve_predicate_map
from .scene_graph import SceneGraph

ELEMENTS = ("object", "attribute", "attribute_pair", "relation", "triplet")
MATCHES = ("exact", "head")
QUALITY_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String,
    "parser": pl.String,
    "element": pl.String,
    "match": pl.String,
    "precision": pl.Float64,
    "recall": pl.Float64,
    "f1": pl.Float64,
    "n_gold": pl.Int64,
    "n_pred": pl.Int64,
    "n_match": pl.Int64,
    "n_captions": pl.Int64,
}

_TRIPLE = re.compile(r"\(([^()]*)\)")


@dataclass(frozen=True, slots=True)
class RawGraph:
    """A graph by name: object names, (object number, value), (subj, predicate, obj)."""

    objects: tuple[str, ...]
    attributes: tuple[tuple[int, str], ...]
    relations: tuple[tuple[int, str, int], ...]


# --------------------------------------------------------------------------------- gold


def factual_graph(scene_graph: str) -> RawGraph:
    """A FACTUAL ``scene_graph`` string as a ``RawGraph`` (objects by first mention)."""
    names: dict[str, int] = {}

    def node(name: str) -> int:
        key = normalise(name)
        return names.setdefault(key, len(names))

    attributes: list[tuple[int, str]] = []
    relations: list[tuple[int, str, int]] = []
    for item in _TRIPLE.findall(scene_graph):
        parts = [p.strip() for p in item.split(" , ")]
        if len(parts) == 1 and parts[0]:
            node(parts[0])
        elif len(parts) == 3 and all(parts):
            subj, pred, obj = parts
            if pred == "is":
                attributes.append((node(subj), normalise(obj)))
            else:
                relations.append((node(subj), normalise(pred), node(obj)))
    return RawGraph(tuple(names), tuple(attributes), tuple(relations))


def read_factual(path: str | Path, limit: int | None = None) -> tuple[list[str], list[RawGraph]]:
    """Captions and gold graphs of a FACTUAL CSV (image_id, region_id, caption, scene_graph)."""
    texts: list[str] = []
    graphs: list[RawGraph] = []
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        missing = {"caption", "scene_graph"} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: missing column(s) {sorted(missing)}")
        for row in reader:
            if limit is not None and len(texts) >= limit:
                break
            texts.append(row["caption"])
            graphs.append(factual_graph(row["scene_graph"]))
    return texts, graphs


def read_world_truth(
    path: str | Path, limit: int | None = None
) -> tuple[list[str], list[RawGraph], list[tuple[str, ...]]]:
    """Captions, gold graphs (names) and gold object lemmas of a world ``truth.parquet``."""
    frame = pl.read_parquet(path, columns=["text", "objects", "attributes", "relations"])
    if limit is not None:
        frame = frame.head(limit)
    texts, graphs, lemmas = [], [], []
    for row in frame.iter_rows(named=True):
        objs = sorted(row["objects"], key=lambda o: o["idx"])
        pos = {o["idx"]: k for k, o in enumerate(objs)}
        texts.append(row["text"])
        lemmas.append(tuple(o["lemma"] for o in objs))
        graphs.append(
            RawGraph(
                tuple(o["name"] for o in objs),
                tuple((pos[a["obj"]], a["value"]) for a in row["attributes"]),
                tuple((pos[r["subj"]], r["pred"], pos[r["obj"]]) for r in row["relations"]),
            )
        )
    return texts, graphs, lemmas


# ---------------------------------------------------------------------------- predicted


def ours_raw(graph: SceneGraph) -> RawGraph:
    return RawGraph(tuple(n for _, n, _ in graph.objects), graph.attributes, graph.relations)


def make_sng_parser(model: str = DEFAULT_SPACY_MODEL) -> Any:
    import sng_parser

    return sng_parser.Parser("spacy", model=model)


def sng_graph(parser: Any, text: str) -> RawGraph:
    try:
        g = parser.parse(text)
    except Exception:  # sng_parser has no error contract; count as nothing parsed
        return RawGraph((), (), ())
    entities = g["entities"]
    objects = tuple(e["head"] for e in entities)
    attributes = tuple(
        (k, m["span"]) for k, e in enumerate(entities) for m in e["modifiers"] if m["dep"] == "amod"
    )
    relations = tuple((r["subject"], r["lemma_relation"], r["object"]) for r in g["relations"])
    return RawGraph(objects, attributes, relations)


# ------------------------------------------------------------------------------ scoring

Keys = dict[str, set[Any]]


def graph_keys(
    graph: RawGraph,
    object_key: Callable[[int], str],
    predicate: Callable[[str], str],
    head: bool,
) -> Keys:
    """The element sets of one graph (see module docstring)."""

    def cut(s: str) -> str:
        return s.rsplit(" ", 1)[-1] if head else s

    objs = [cut(object_key(k)) for k in range(len(graph.objects))]
    n = len(objs)
    values = [(o, cut(normalise(v))) for o, v in graph.attributes if 0 <= o < n]
    rels = [(s, predicate(p), o) for s, p, o in graph.relations if 0 <= s < n and 0 <= o < n]
    return {
        "object": set(objs),
        "attribute": {v for _, v in values},
        "attribute_pair": {(objs[o], v) for o, v in values},
        "relation": {p for _, p, _ in rels},
        "triplet": {(objs[s], p, objs[o]) for s, p, o in rels},
    }


@dataclass
class Tally:
    gold: int = 0
    pred: int = 0
    match: int = 0

    def add(self, gold: set[Any], pred: set[Any]) -> None:
        self.gold += len(gold)
        self.pred += len(pred)
        self.match += len(gold & pred)

    def scores(self) -> tuple[float, float, float]:
        p = self.match / self.pred if self.pred else 0.0
        r = self.match / self.gold if self.gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return p, r, f


def score(
    gold: Sequence[RawGraph],
    pred: Sequence[RawGraph],
    lemmatizer: Lemmatizer,
    predicate: Callable[[str], str],
    gold_lemmas: Sequence[Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    """Rows (element, match, precision, recall, f1, n_gold, n_pred, n_match) for one
    parser on one dataset."""
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold graphs but {len(pred)} predicted")
    tallies = {(e, m): Tally() for e in ELEMENTS for m in MATCHES}
    for k, (g, p) in enumerate(zip(gold, pred, strict=True)):
        if gold_lemmas is not None:
            lemmas = gold_lemmas[k]

            def g_key(i: int, lemmas: Sequence[str] = lemmas) -> str:
                return normalise(lemmas[i])
        else:

            def g_key(i: int, g: RawGraph = g) -> str:
                return lemmatizer.phrase(g.objects[i])

        def p_key(i: int, p: RawGraph = p) -> str:
            return lemmatizer.phrase(p.objects[i])

        for m in MATCHES:
            gk = graph_keys(g, g_key, predicate, m == "head")
            pk = graph_keys(p, p_key, predicate, m == "head")
            for e in ELEMENTS:
                tallies[(e, m)].add(gk[e], pk[e])
    rows = []
    for (e, m), t in tallies.items():
        precision, recall, f1 = t.scores()
        rows.append(
            {
                "element": e,
                "match": m,
                "precision": precision,
                "recall": recall,
                "f1": f1,
                "n_gold": t.gold,
                "n_pred": t.pred,
                "n_match": t.match,
                "n_captions": len(gold),
            }
        )
    return rows


# ---------------------------------------------------------------------------------- job


def evaluate_dataset(
    dataset: str,
    texts: Sequence[str],
    gold: Sequence[RawGraph],
    parsers: Mapping[str, Callable[[Sequence[str]], list[RawGraph]]],
    lemmatizer: Lemmatizer,
    predicate: PredicateMap,
    gold_lemmas: Sequence[Sequence[str]] | None = None,
) -> list[dict[str, Any]]:
    rows = []
    for label, run in parsers.items():
        for row in score(gold, run(texts), lemmatizer, predicate, gold_lemmas):
            rows.append({"dataset": dataset, "parser": label, **row})
    return rows


def _dataset_name(path: Path) -> str:
    return f"world_{path.parent.name}" if path.name == "truth.parquet" else path.stem


def parser_quality(
    factual_csv: str | Path | None,
    world_truth_paths: Iterable[str | Path],
    out_table: str | Path,
    *,
    backend: str = "spacy",
    model: str = DEFAULT_SPACY_MODEL,
    limit: int | None = None,
    batch_size: int = 256,
    n_process: int = 1,
    with_sng: bool = True,
    gold_predicate_map: str | Path | Mapping[str, str] | None = None,
    gold_strip_verbs: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> pl.DataFrame:
    """Precision/recall of our parser (and ``sng_parser``) on FACTUAL and world truth.

    Writes ``out_table`` (Parquet, ``QUALITY_SCHEMA``; versions in its metadata) and the
    same table as Markdown beside it (``.md``). ``limit`` caps captions per dataset. Our
    parser is scored twice on FACTUAL: with default options, and with ``numerals`` on
    (FACTUAL annotates counts as attributes, "( boats , is , 5 )"). The gold graph tables
    are parsed with ``gold_predicate_map`` / ``gold_strip_verbs`` (the parse settings).
    """
    say = log or (lambda _m: None)
    backend_kwargs: dict[str, Any] = {"model": model} if backend == "spacy" else {}
    generic = CaptionParser(backend, make_options(), **backend_kwargs)
    lemmatizer = generic.backend.lemmatizer
    if lemmatizer is None:
        from .backends import SpacyBackend

        lemmatizer = SpacyBackend(model=model).lemmatizer
    assert lemmatizer is not None
    ours_label = generic.parser_name.split("/")[0]
    rows: list[dict[str, Any]] = []
    versions: dict[str, Any] = {"ours": generic.metadata()}
    sng: Any = None
    if with_sng:
        import sng_parser

        sng = make_sng_parser(model)
        version = ".".join(map(str, sng_parser.__version__))
        versions["sng_parser"] = {"parser": f"sng_parser-{version}/{model}", "model": model}

    def run_ours(parser: CaptionParser) -> Callable[[Sequence[str]], list[RawGraph]]:
        def run(texts: Sequence[str]) -> list[RawGraph]:
            graphs = parser.parse(texts, batch_size=batch_size, n_process=n_process)
            return [ours_raw(g) for g in graphs]

        return run

    def run_sng(texts: Sequence[str]) -> list[RawGraph]:
        return [sng_graph(sng, t) for t in texts]

    if factual_csv is not None:
        texts, gold = read_factual(factual_csv, limit)
        say(f"FACTUAL {factual_csv}: {len(texts)} captions")
        numerals = CaptionParser(generic.backend, make_options(numerals=True))
        parsers = {ours_label: run_ours(generic), f"{ours_label}+numerals": run_ours(numerals)}
        if with_sng:
            parsers["sng_parser"] = run_sng
        name = f"factual_{Path(factual_csv).stem}"
        rows += evaluate_dataset(name, texts, gold, parsers, lemmatizer, generic.options.predicates)

    world_map = resolve_predicate_map(gold_predicate_map, gold_strip_verbs)
    world = CaptionParser(generic.backend, make_options(world_map))
    for path in map(Path, world_truth_paths):
        texts, gold, gold_lemmas = read_world_truth(path, limit)
        say(f"world {path}: {len(texts)} captions")
        parsers = {ours_label: run_ours(world)}
        if with_sng:
            parsers["sng_parser"] = run_sng
        rows += evaluate_dataset(
            _dataset_name(path), texts, gold, parsers, lemmatizer, world_map, gold_lemmas
        )

    table = (
        pl.DataFrame(rows, schema=QUALITY_SCHEMA) if rows else pl.DataFrame(schema=QUALITY_SCHEMA)
    )
    out = Path(out_table)
    write_parquet(
        table, out, metadata={"vlcomp.parser_quality": json.dumps(versions, sort_keys=True)}
    )
    with atomic_path(out.with_suffix(".md")) as tmp:
        tmp.write_text(quality_markdown(table, versions))
    return table


def quality_markdown(table: pl.DataFrame, versions: Mapping[str, Any] | None = None) -> str:
    """The quality table as Markdown: one block per dataset and match mode."""
    lines = ["# Scene-graph parser quality", ""]
    if versions:
        for key, value in versions.items():
            parser = value.get("parser", value) if isinstance(value, dict) else value
            lines.append(f"- {key}: `{parser}`")
        lines.append("")
    for (dataset, match), block in table.group_by(["dataset", "match"], maintain_order=True):
        n = block["n_captions"][0]
        lines += [f"## {dataset} ({n} captions), {match} match", ""]
        lines.append("| parser | element | precision | recall | F1 | n_gold | n_pred |")
        lines.append("|---|---|---:|---:|---:|---:|---:|")
        for r in block.iter_rows(named=True):
            lines.append(
                f"| {r['parser']} | {r['element']} | {r['precision']:.3f} | {r['recall']:.3f} "
                f"| {r['f1']:.3f} | {r['n_gold']} | {r['n_pred']} |"
            )
        lines.append("")
    return "\n".join(lines)
