# The world's rules: its files and the ground-truth checks (see world_preset.smk).


rule world_eval:
    output:
        images=directory("results/world/eval/images"),
        vg=directory("results/world/eval/vg"),
        coco="results/world/eval/coco_captions.json",
        truth="results/world/eval/truth.parquet",
        holdout="results/world/eval/holdout.parquet",
        scenes="results/world/eval/scenes.parquet",
        twins="results/world/eval/twins.parquet",
    log:
        "logs/world/eval.log",
    # On the longest chain after training (eval set -> pairs -> MiniLM -> debiasing):
    # started as soon as it can, it runs beside the other jobs instead of alone at the end.
    priority: 5
    conda:
        "../envs/vlcomp.yaml"
    params:
        world=world_shared_settings(),
    message:
        "Rendering the synthetic evaluation set (Visual Genome + COCO formats)"
    script:
        "../scripts/world_eval.py"


rule world_corpus:
    output:
        directory("results/world/corpora/{corpus}"),
    log:
        "logs/world/corpus_{corpus}.log",
    wildcard_constraints:
        corpus=names_re(WORLD_CORPORA),
    # First in line, like ingest and parsing: the models train on it.
    priority: 20
    conda:
        "../envs/vlcomp.yaml"
    params:
        world=lambda wc: world_corpus_settings(wc.corpus),
    message:
        "Rendering training corpus {wildcards.corpus} in its native format"
    script:
        "../scripts/world_corpus.py"


rule world_scale_corpus:
    output:
        "results/world/scale/{corpus}/{file}",
    log:
        "logs/world/scale_{corpus}_{file}.log",
    wildcard_constraints:
        corpus=names_re(WORLD_CORPORA),
    conda:
        "../envs/vlcomp.yaml"
    params:
        world=lambda wc: world_corpus_settings(wc.corpus),
        n_captions=lambda wc: SCALE_CORPORA[f"scale_{wc.corpus}"]["n_captions"],
    message:
        "Writing {params.n_captions} captions of {wildcards.corpus} for the scale benchmark"
    script:
        "../scripts/world_scale_corpus.py"


rule world_predicates:
    output:
        "results/world/predicates.json",
    log:
        "logs/world/predicates.log",
    # On the longest chain after training (eval set -> pairs -> MiniLM -> debiasing):
    # started as soon as it can, it runs beside the other jobs instead of alone at the end.
    priority: 5
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Writing the world's relation surface forms -> predicates (the parse settings' map)"
    script:
        "../scripts/world_predicates.py"


rule world_manifest:
    output:
        "results/world/manifest.json",
    log:
        "logs/world/manifest.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        world=world_shared_settings(),
    message:
        "Writing the hold-out manifest (ground truth for the splits)"
    script:
        "../scripts/world_manifest.py"


rule check_world_splits:
    input:
        eval_items="results/eval_sets/{evalset}/items.parquet",
        splits="results/splits/{evalset}/{corpus}.parquet",
        manifest=lambda wc: EVAL_SETS[wc.evalset]["ground_truth"],
    output:
        report(
            "results/splits/{evalset}/{corpus}_agreement.json",
            caption="../report/split_agreement.rst",
            category="Splits",
            subcategory="{evalset}",
            labels={
                "table": "agreement with the world's hold-outs",
                "corpus": "{corpus}",
            },
        ),
    log:
        "logs/splits/{evalset}_{corpus}_agreement.log",
    wildcard_constraints:
        evalset=names_re(GROUND_TRUTH_SETS),
        corpus=names_re(WORLD_CORPORA),
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Agreement of the derived splits with the world's known hold-outs ({wildcards.corpus})"
    script:
        "../scripts/check_world_splits.py"


rule world_heldout:
    input:
        predictions=expand(
            "results/metrics/{model}/{{benchmark}}_predictions.parquet",
            model=EVAL_MODELS,
        ),
        holdout="results/world/eval/holdout.parquet",
    output:
        metrics="results/world/heldout/{benchmark}.parquet",
        predictions="results/world/heldout/{benchmark}_predictions.parquet",
    log:
        "logs/world/heldout_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("pairs")),
    conda:
        "../envs/vlcomp.yaml"
    params:
        training_corpus={model: model_corpus(model) for model in EVAL_MODELS},
        settings=set_eval_settings(),
    message:
        "Held-in vs held-out metrics of {wildcards.benchmark} (the world's ground truth)"
    script:
        "../scripts/world_heldout.py"


rule world_heldout_retrieval:
    input:
        ranks=expand(
            "results/metrics/{model}/{{benchmark}}_ranks.parquet", model=EVAL_MODELS
        ),
        holdout="results/world/eval/holdout.parquet",
    output:
        metrics="results/world/heldout/{benchmark}.parquet",
    log:
        "logs/world/heldout_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(benchmarks_of("retrieval")),
    conda:
        "../envs/vlcomp.yaml"
    params:
        training_corpus={model: model_corpus(model) for model in EVAL_MODELS},
        settings={**set_eval_settings(), "recall_at": config["evaluate"]["recall_at"]},
    message:
        "Held-in vs held-out retrieval of {wildcards.benchmark} (the world's ground truth)"
    script:
        "../scripts/world_heldout_retrieval.py"


rule figure_world_heldout:
    input:
        "results/world/heldout/{benchmark}.parquet",
    output:
        png=report(
            "results/figures/{benchmark}_heldout.png",
            caption="../report/heldout_figure.rst",
            category="Figures",
            subcategory="{benchmark}",
            labels={"figure": "held-in vs held-out", "benchmark": "{benchmark}"},
        ),
        pdf="results/figures/{benchmark}_heldout.pdf",
    log:
        "logs/figures/{benchmark}_heldout.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        kind=lambda wc: BENCHMARKS[wc.benchmark]["kind"],
    message:
        "Plotting {wildcards.benchmark} on held-in vs held-out images"
    script:
        "../scripts/figure_benchmark.py"


rule world_oracles:
    input:
        sets=lambda wc: [
            p[k] for p in oracle_parts(wc.benchmark) for k in ("candidates", "boxes")
        ],
        scenes="results/world/eval/scenes.parquet",
    output:
        metrics="results/world/oracles/{benchmark}.parquet",
        false_negatives="results/world/oracles/{benchmark}_false_negatives.parquet",
        unreadable="results/world/oracles/{benchmark}_unreadable.parquet",
    log:
        "logs/world/oracles_{benchmark}.log",
    wildcard_constraints:
        benchmark=names_re(list(ORACLE_TABLES)),
    conda:
        "../envs/vlcomp.yaml"
    params:
        parts=lambda wc: oracle_parts(wc.benchmark),
        world=world_shared_settings(),
        settings={
            "recall_at": config["evaluate"]["set_recall_at"],
            **{
                k: config["evaluate"][k]
                for k in ("bootstrap_resamples", "bootstrap_seed")
            },
        },
    message:
        "Ground-truth oracles and false-negative rates of {wildcards.benchmark}"
    script:
        "../scripts/world_oracles.py"
