rule figure_benchmark:
    input:
        "results/metrics/{table}.parquet",
    output:
        png=report(
            "results/figures/{table}.png",
            caption="../report/figure_benchmark.rst",
            category="Figures",
            subcategory=lambda wc: table_benchmark(wc.table),
            labels={"figure": "{table}"},
        ),
        pdf="results/figures/{table}.pdf",
    log:
        "logs/figures/{table}.log",
    wildcard_constraints:
        table=names_re(
            [
                *BENCHMARKS,
                *(f"{b}_bindsplit" for b in benchmarks_of("crepe_systematicity")),
            ]
        ),
    conda:
        "../envs/vlcomp.yaml"
    params:
        kind=lambda wc: figure_kind(wc.table),
    message:
        "Plotting {wildcards.table}"
    script:
        "../scripts/figure_benchmark.py"


rule figure_crossover:
    input:
        "results/stats/crossover.parquet",
    output:
        png=report(
            "results/figures/crossover.png",
            caption="../report/figure_crossover.rst",
            category="Figures",
            subcategory="across benchmarks",
            labels={"figure": "crossover: own vs other training corpus"},
        ),
        pdf="results/figures/crossover.pdf",
    log:
        "logs/figures/crossover.log",
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Plotting the crossover comparison"
    script:
        "../scripts/figure_crossover.py"


rule figure_all_benchmarks:
    input:
        metric_tables(),
    output:
        png=report(
            "results/figures/all_benchmarks.png",
            caption="../report/figure_all_benchmarks.rst",
            category="Figures",
            subcategory="across benchmarks",
            labels={"figure": "every benchmark, one panel per headline metric"},
        ),
        pdf="results/figures/all_benchmarks.pdf",
    log:
        "logs/figures/all_benchmarks.log",
    conda:
        "../envs/vlcomp.yaml"
    params:
        model_corpus={model: model_corpus(model) for model in EVAL_MODELS},
    message:
        "Plotting every benchmark's headline metric per model"
    script:
        "../scripts/figure_all_benchmarks.py"
