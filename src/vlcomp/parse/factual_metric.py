"""FACTUAL's own scene-graph metric (Li et al., ACL Findings 2023; the
``factualscenegraph`` package's ``Evaluator``), so that a parser is scored exactly as
FACTUAL scores its parsers: graphs written as FACTUAL fact strings
(``( subject , predicate , object ) , ( object , is , attribute ) , ( object )``), SPICE
(an F-score over objects, attributes and triples with WordNet synonyms, lemmatised) and
Set Match (the whole graph right), each the mean over captions, in percent."""

from __future__ import annotations

from collections.abc import Sequence

from .quality import RawGraph


def fact_string(graph: RawGraph) -> str:
    """``graph`` in FACTUAL's fact-string format: relations, then attributes, then each
    object that is in neither as ``( object )``."""
    facts = [f"( {graph.objects[s]} , {p} , {graph.objects[o]} )" for s, p, o in graph.relations]
    facts += [f"( {graph.objects[i]} , is , {value} )" for i, value in graph.attributes]
    named = {i for s, _, o in graph.relations for i in (s, o)} | {i for i, _ in graph.attributes}
    facts += [f"( {name} )" for i, name in enumerate(graph.objects) if i not in named]
    return " , ".join(facts)


def factual_scores(candidates: Sequence[RawGraph], references: Sequence[str]) -> dict[str, float]:
    """{"spice", "set_match"}: FACTUAL's metric of ``candidates`` against one gold fact
    string each, as FACTUAL computes it: ``Evaluator(parser=None, lemmatize=True)``,
    ``evaluate(..., method="spice", return_graphs=True)``, then ``method="set_match"`` on
    the graphs it returned."""
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidate graphs but {len(references)} references")
    if not candidates:
        raise ValueError("no graphs to score")
    from factual_scene_graph.evaluation.evaluator import Evaluator

    evaluator = Evaluator(parser=None, lemmatize=True)
    spice, graphs, gold = evaluator.evaluate(
        [fact_string(g) for g in candidates],
        [[r] for r in references],
        method="spice",
        return_graphs=True,
    )
    set_match = evaluator.evaluate(graphs, gold, method="set_match")
    return {
        "spice": float(sum(spice) / len(spice)),
        "set_match": float(sum(set_match) / len(set_match)),
    }
