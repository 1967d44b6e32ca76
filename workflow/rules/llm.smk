# LLM hard negatives and productivity captions through an OpenAI-compatible endpoint
# (config `llm`). Generated items are validated by the job, then pass a human review step:
# `review/<benchmark>/sheet.html` to decide, `benchmarks.<name>.review` to apply.


rule llm_pairs:
    input:
        eval_items=lambda wc: f"results/eval_sets/{eval_set_of(wc.benchmark)}/items.parquet",
        predicate_map=predicate_map_input(),
    output:
        generated="results/negatives/{benchmark}/generated.parquet",
        boxes="results/negatives/{benchmark}/boxes.parquet",
        rejections="results/negatives/{benchmark}/rejections.parquet",
        rejections_csv=report(
            "results/negatives/{benchmark}/rejections.csv",
            caption="../report/llm_rejections.rst",
            category="Benchmarks",
            subcategory="{benchmark}",
            labels={"table": "LLM rejections by reason", "benchmark": "{benchmark}"},
        ),
        stats="results/negatives/{benchmark}/llm_stats.json",
    log:
        "logs/negatives/{benchmark}_llm.log",
    wildcard_constraints:
        benchmark=names_re(LLM_PAIRS),
    conda:
        "../envs/vlcomp.yaml"
    resources:
        llm_api=llm_api_slots(),
    params:
        llm=llm_settings(),
        parse=parse_settings(*PARSER_KEYS),
        seed=config["negatives"]["seed"],
        families=lambda wc: BENCHMARKS[wc.benchmark]["families"],
        max_items=lambda wc: BENCHMARKS[wc.benchmark]["max_items"],
        context_length=negatives_context_length(),
        cache="results/cache/llm",
    message:
        "LLM hard negatives (REPLACE / SWAP / ADD) for {wildcards.benchmark}"
    script:
        "../scripts/llm_pairs.py"


use rule productivity_negatives as productivity_template with:
    output:
        candidates="results/negatives/{benchmark}/template/candidates.parquet",
        boxes="results/negatives/{benchmark}/template/boxes.parquet",
        failures="results/negatives/{benchmark}/template/failures.parquet",
        summary="results/negatives/{benchmark}/template/summary.parquet",
        summary_csv="results/negatives/{benchmark}/template/summary.csv",
    log:
        "logs/negatives/{benchmark}_template.log",
    wildcard_constraints:
        benchmark=names_re(LLM_PRODUCTIVITY),


rule llm_productivity:
    input:
        vg=lambda wc: EVAL_SETS[eval_set_of(wc.benchmark)]["dir"],
        candidates="results/negatives/{benchmark}/template/candidates.parquet",
        boxes="results/negatives/{benchmark}/template/boxes.parquet",
        summary="results/negatives/{benchmark}/template/summary.parquet",
        predicate_map=predicate_map_input(),
    output:
        generated="results/negatives/{benchmark}/generated.parquet",
        boxes="results/negatives/{benchmark}/boxes.parquet",
        rejections="results/negatives/{benchmark}/rejections.parquet",
        stats="results/negatives/{benchmark}/llm_stats.json",
        summary="results/negatives/{benchmark}/summary.parquet",
    log:
        "logs/negatives/{benchmark}_llm.log",
    wildcard_constraints:
        benchmark=names_re(LLM_PRODUCTIVITY),
    conda:
        "../envs/vlcomp.yaml"
    resources:
        llm_api=llm_api_slots(),
    params:
        llm=llm_settings(),
        parse=parse_settings(*PARSER_KEYS),
        settings=productivity_settings(),
        seed=config["negatives"]["seed"],
        context_length=negatives_context_length(),
        cache="results/cache/llm",
    message:
        "LLM captions for {wildcards.benchmark}'s walks of five atoms or more"
    script:
        "../scripts/llm_productivity.py"


rule review_sheet:
    input:
        candidates="results/negatives/{benchmark}/generated.parquet",
        boxes="results/negatives/{benchmark}/boxes.parquet",
        images=image_index,
    output:
        "results/review/{benchmark}/sheet.html",
    log:
        "logs/review/{benchmark}_sheet.log",
    wildcard_constraints:
        benchmark=names_re(LLM_BENCHMARKS),
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Review sheet of {wildcards.benchmark} (open it in a browser, save decisions.csv)"
    script:
        "../scripts/review_sheet.py"


rule apply_review:
    input:
        candidates="results/negatives/{benchmark}/generated.parquet",
        decisions=lambda wc: BENCHMARKS[wc.benchmark]["review"] or [],
    output:
        candidates="results/negatives/{benchmark}/candidates.parquet",
        summary="results/negatives/{benchmark}/review.json",
    log:
        "logs/review/{benchmark}_apply.log",
    wildcard_constraints:
        benchmark=names_re(LLM_BENCHMARKS),
    conda:
        "../envs/vlcomp.yaml"
    message:
        "Applying the human review decisions of {wildcards.benchmark}"
    script:
        "../scripts/apply_review.py"
