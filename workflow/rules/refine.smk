rule score_world_pairs:
    input:
        candidates="results/negatives/world_pairs/candidates.parquet",
        scorers=lambda wc: trained_scorers(wc.corpus),
    output:
        "results/scores/world_pairs/{corpus}.parquet",
    log:
        "logs/refine/score_world_pairs_{corpus}.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        specs=lambda wc: scorer_specs(
            f"results/scorers/{wc.corpus}", config["scorers"]["use"], config["scorers"]
        ),
        cache="results/cache/scores.parquet",
    message:
        "Scoring the world's pairs with text-only scorers trained on {wildcards.corpus}"
    script:
        "../scripts/score_benchmark.py"


rule blind_world_pairs:
    input:
        candidates="results/negatives/world_pairs/candidates.parquet",
        scores="results/scores/world_pairs/{corpus}.parquet",
    output:
        report(
            "results/blind/world_pairs/{corpus}.parquet",
            category="Blind baselines",
            labels={"benchmark": "world pairs", "scorers trained on": "{corpus}"},
        ),
    log:
        "logs/refine/blind_world_pairs_{corpus}.log",
    conda:
        "../../envs/vlcomp.yaml"
    message:
        "Blind (text-only) baselines on the world's pairs ({wildcards.corpus} scorers)"
    script:
        "../scripts/blind_baselines.py"


rule refine_world_pairs:
    input:
        candidates="results/negatives/world_pairs/candidates.parquet",
        scores="results/scores/world_pairs/{corpus}.parquet",
    output:
        refine_items="results/refine/world_pairs/{corpus}/items.parquet",
        refined="results/refine/world_pairs/{corpus}/refined_candidates.parquet",
        counts="results/refine/world_pairs/{corpus}/counts.parquet",
        accuracy="results/refine/world_pairs/{corpus}/blind_accuracy.parquet",
        png=report(
            "results/figures/refine_world_pairs_{corpus}.png",
            category="Figures",
            labels={"figure": "refinement gaps", "scorers trained on": "{corpus}"},
        ),
        pdf="results/figures/refine_world_pairs_{corpus}.pdf",
    log:
        "logs/refine/refine_world_pairs_{corpus}.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        refine=config["refine"],
        scorers=config["scorers"]["use"][:2],
    message:
        "Adversarial refinement of the world's pairs ({wildcards.corpus} scorers)"
    script:
        "../scripts/refine.py"


rule priors_world_pairs:
    input:
        candidates="results/negatives/world_pairs/candidates.parquet",
        scores=lambda wc: f"results/scores/world_pairs/{corpus_of_model(wc)}.parquet",
        predictions="results/metrics/{model}/world_pairs_predictions.parquet",
    output:
        table="results/priors/{model}/world_pairs.parquet",
        heatmap="results/priors/{model}/world_pairs_heatmap.parquet",
        png=report(
            "results/figures/priors_{model}_world_pairs.png",
            category="Figures",
            labels={"figure": "linguistic priors", "model": "{model}"},
        ),
        pdf="results/figures/priors_{model}_world_pairs.pdf",
    log:
        "logs/refine/priors_{model}_world_pairs.log",
    conda:
        "../../envs/vlcomp.yaml"
    params:
        priors=config["priors"],
    message:
        "Hard test accuracy and linguistic gap of {wildcards.model} on the world's pairs"
    script:
        "../scripts/priors.py"


rule sugarcrepe_audit:
    input:
        sugarcrepe=config["audit"]["sugarcrepe_dir"],
        scorers=trained_scorers("sugarcrepe_audit"),
    output:
        report(
            "results/audit/sugarcrepe/audit.md",
            category="Audit",
            labels={"table": "SugarCrepe blind audit"},
        ),
    log:
        "logs/audit/sugarcrepe.log",
    benchmark:
        "benchmarks/audit/sugarcrepe.tsv"
    conda:
        "../../envs/vlcomp.yaml"
    params:
        specs=scorer_specs(
            "results/scorers/sugarcrepe_audit",
            config["scorers"]["use"],
            config["scorers"],
        ),
        refine=config["refine"],
        cache="results/cache/scores.parquet",
    message:
        "Blind baselines, refinement and word-multiset check on the published SugarCrepe"
    script:
        "../scripts/sugarcrepe_audit.py"
