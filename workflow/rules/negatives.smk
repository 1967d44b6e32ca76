rule world_pairs:
    input:
        truth="results/world/eval/truth.parquet",
        scenes="results/world/eval/scenes.parquet",
    output:
        candidates="results/negatives/world_pairs/candidates.parquet",
        failures="results/negatives/world_pairs/failures.parquet",
    log:
        "logs/negatives/world_pairs.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        world=config["world"],
        seed=config["negatives"]["seed"],
    message:
        "Hard negatives for the world's captions (replace/swap attribute, object, relation)"
    script:
        "../scripts/world_pairs.py"


rule world_productivity:
    input:
        "results/world/eval/vg",
    output:
        candidates="results/negatives/crepe_productivity/candidates.parquet",
        boxes="results/negatives/crepe_productivity/items.parquet",
        failures="results/negatives/crepe_productivity/failures.parquet",
        summary=report(
            "results/negatives/crepe_productivity/summary.parquet",
            category="Benchmarks",
            labels={"table": "productivity sizes"},
        ),
    log:
        "logs/negatives/world_productivity.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        world=config["world"],
        settings=config["negatives"]["productivity"],
        seed=config["negatives"]["seed"],
    message:
        "CREPE productivity: random walks, template captions and HN-ATOM/SWAP/NEG"
    script:
        "../scripts/world_productivity.py"


rule wordnet:
    output:
        "resources/nltk_data/corpora/wordnet/lexnames",
    log:
        "logs/negatives/wordnet.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Installing WordNet 3.0 for NLTK (no root needed)"
    script:
        "../scripts/wordnet.py"


rule systematicity_negatives:
    input:
        eval_items="results/eval_items/{evalset}.parquet",
        atoms="results/counts/{corpus}/atoms.parquet",
        ngram="results/scorers/{corpus}/ngram.parquet",
        splits="results/splits/{evalset}/{corpus}.parquet",
        wordnet="resources/nltk_data/corpora/wordnet/lexnames",
    output:
        candidates="results/negatives/crepe_systematicity/{evalset}/{corpus}/candidates.parquet",
        failures=report(
            "results/negatives/crepe_systematicity/{evalset}/{corpus}/failures.parquet",
            category="Benchmarks",
            labels={"table": "systematicity failures", "corpus": "{corpus}"},
        ),
        regions="results/negatives/crepe_systematicity/{evalset}/{corpus}/regions.parquet",
    log:
        "logs/negatives/systematicity_{evalset}_{corpus}.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        settings=config["negatives"]["systematicity"],
        seed=config["negatives"]["seed"],
    message:
        "CREPE systematicity negatives (HN-ATOM, HN-COMP) for {wildcards.evalset} "
        "with {wildcards.corpus}'s vocabulary"
    script:
        "../scripts/systematicity_negatives.py"


rule export_crepe:
    input:
        candidates="results/negatives/crepe_systematicity/{evalset}/{corpus}/candidates.parquet",
        regions="results/negatives/crepe_systematicity/{evalset}/{corpus}/regions.parquet",
        splits="results/splits/{evalset}/{corpus}.parquet",
    output:
        summary="results/export/crepe/{evalset}/{corpus}/summary.json",
    log:
        "logs/negatives/export_crepe_{evalset}_{corpus}.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Exporting the systematicity benchmark in CREPE's CSV layout"
    script:
        "../scripts/export_crepe.py"


rule export_productivity:
    input:
        candidates="results/negatives/crepe_productivity/candidates.parquet",
        boxes="results/negatives/crepe_productivity/items.parquet",
    output:
        "results/export/crepe/productivity/files.json",
    log:
        "logs/negatives/export_productivity.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Exporting the productivity benchmark in CREPE's CSV layout"
    script:
        "../scripts/export_productivity.py"
