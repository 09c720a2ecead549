import os
import re

SYNTHETIC_EXPERIMENTS = "|".join(re.escape(e) for e in grid.experiments(config)) or "(?!)"

# Stage: training. Each rule is named after its step; the command it runs carries the paper's
# prefix (rule search_table runs `noisyor-bench acp-search-table`), with a qualifier where one
# command runs in several rules: `search_chunk` (`acp-search`; `search_select` runs
# `acp-search-select`); `train_cell` and
# `train_cell_<experiment>[_<n>seeds]` (synthetic cells, one rule per seed list, below);
# `corpus_hparams` and `train_cell_corpus` (the real-corpus cells of the grid's `text` section).
#
# Synthetic cells: one job per grid cell (experiment, dataset, method, N_train): first its
# random search (chunks of draws, selected on validation NELBO by search_select), then its runs over
# the experiment's seeds (its own `seeds`, else the grid's). Grid, budgets, seeds and draws come
# from noisyor_bench.experiments.acp.grid (see rules/acp.smk). Each draw and seed derives its initialisation from
# (cell, draw or final, seed) inside the CLI (noisyor_bench.inference.seeding.run_init_key).


# A cell's search runs as chunk jobs (acp_costs.search_chunks): `search.draws_per_job` draws
# each, or, with `search.max_job_hours`, as many nearly equal chunks as the cost model's estimate
# of the whole search needs to keep each under that bound (a small cell: one chunk; unset: one),
# side by side on a cluster, and one search_select job that merges their tables into search.csv
# and best.json. A draw's values and initialisation derive from (cell, draw index, seed) only, so
# the split changes no number.
rule search_chunk:
    input:
        dataset=R("data/{dataset}.npz"),
        stale=stale_check(
            _chunk_draw_records,
            lambda w: R(f"data/{w.dataset}.npz"),
            lambda w: grid.budget(config, cell_of(w)),
            lambda w: R(f"search/{w.experiment}/{w.dataset}/{w.method}/n{w.n}/chunks/{w.chunk}.csv"),
            fit_only=True,
        ),
    output:
        table=R("search/{experiment}/{dataset}/{method}/n{n}/chunks/{chunk}.csv"),
    log:
        log_path("search_chunk", "{experiment}/{dataset}/{method}/n{n}/{chunk}"),
    benchmark:
        benchmark_path("search_chunk", "{experiment}/{dataset}/{method}/n{n}/{chunk}")
    wildcard_constraints:
        experiment=SYNTHETIC_EXPERIMENTS,
        chunk="[0-9]+",
    # ordered by the measured seconds of the cell's whole search (config/job_seconds.csv, rule `search`)
    priority: measured_priority("search", "{experiment}/{dataset}/{method}/n{n}")
    conda:
        CONDA_ENV
    threads: THREADS
    resources:
        **compute_resources("search_chunk", "{experiment}/{dataset}/{method}/n{n}/{chunk}"),
    params:
        mode=lambda w: cell_of(w).mode,
        seed=lambda w: grid.seeds(config, w.experiment, w.dataset)[0],
        draws=lambda w: json_param(grid.draws(config, cell_of(w))),
        draws_range=lambda w: search_chunk_range(w),
        inits=lambda w: grid.inits_per_draw(config, cell_of(w)),
        factor=lambda w: grid.latents_factor(config, w.experiment),
        budget=lambda w: json_param(grid.budget(config, cell_of(w))),
        evaluation=json_param(grid.evaluation(config)),
        device=DEVICE,
        batch="--batch-draws" if ACP_GRID.get("batched") else "",
    shell:
        "noisyor-bench acp-search --dataset {input.dataset:q} --dataset-name {wildcards.dataset:q}"
        " --experiment {wildcards.experiment:q} --method {wildcards.method:q} --mode {params.mode}"
        " --n-train {wildcards.n} --seed {params.seed} --draws {params.draws} --inits-per-draw {params.inits}"
        " --latents-factor {params.factor} --budget {params.budget}"
        " --evaluation {params.evaluation} --device {params.device:q} --threads {threads}"
        " {params.batch} --draws-range {params.draws_range} --out-chunk {output.table:q} > {log:q} 2>&1"


rule search_select:
    input:
        chunks=search_chunk_tables,
    output:
        best=R("search/{experiment}/{dataset}/{method}/n{n}/best.json"),
        table=R("search/{experiment}/{dataset}/{method}/n{n}/search.csv"),
    log:
        log_path("search_select", "{experiment}/{dataset}/{method}/n{n}"),
    benchmark:
        benchmark_path("search_select", "{experiment}/{dataset}/{method}/n{n}")
    wildcard_constraints:
        experiment=SYNTHETIC_EXPERIMENTS,
    priority: measured_priority("search_select", "{experiment}/{dataset}/{method}/n{n}")
    conda:
        CONDA_ENV
    params:
        out_dir=lambda w, output: os.path.dirname(output.best),
    shell:
        "noisyor-bench acp-search-select --chunks {input.chunks:q} --out-dir {params.out_dir:q} > {log:q} 2>&1"


# Every draw of the grid's searches and the selected hyperparameters (a published reference
# shows them): tables/search_draws.{csv,md}.
rule search_table:
    input:
        best=lambda w: searched_files("best.json"),
        tables=lambda w: searched_files("search.csv"),
    output:
        csv=R("tables/search_draws.csv"),
        md=R("tables/search_draws.md"),
    log:
        log_path("search_table", "search_draws"),
    benchmark:
        benchmark_path("search_table", "search_draws")
    conda:
        CONDA_ENV
    params:
        dirs=lambda w, input: " ".join(shlex.quote(os.path.dirname(f)) for f in input.best),
    shell:
        "noisyor-bench acp-search-table --searches {params.dirs} --out-csv {output.csv:q} --out-md {output.md:q} > {log:q} 2>&1"


# One train_cell rule per seed list (grid.seed_groups): a rule's outputs, one set per seed, are
# fixed, so experiments with seeds of their own (e.g. quick's fig4) get `train_cell_<experiment>`
# and experiments whose datasets run different seed lists (`dataset_seeds`, e.g. extended's fig5)
# get `train_cell_<experiment>_<n>seeds`, restricted to those datasets; logs and benchmarks of all
# of them go under train_cell/ (one line in the runtime table). Their resources (GPU, limits) come
# from compute_resources (the cost model), so no profile lists these rule names.
for _group in grid.seed_groups(config):

    rule:
        name:
            f"train_cell{_group.suffix}"
        input:
            dataset=R("data/{dataset}.npz"),
            best=search_result,
            stale=stale_check(
                lambda w, seeds=_group.seeds: run_files(
                    w.experiment, w.dataset, w.method, w.n, files=("metrics.json",), seeds=seeds
                ),
                lambda w: R(f"data/{w.dataset}.npz"),
                lambda w: grid.budget(config, cell_of(w)),
                lambda w, seeds=_group.seeds: RUN(
                    w.experiment, w.dataset, w.method, w.n, seed=seeds[0], file="metrics.json"
                ),
            ),
        output:
            run_files("{experiment}", "{dataset}", "{method}", "{n}", seeds=_group.seeds),
        log:
            log_path("train_cell", "{experiment}/{dataset}/{method}/n{n}"),
        benchmark:
            benchmark_path("train_cell", "{experiment}/{dataset}/{method}/n{n}")
        wildcard_constraints:
            experiment="|".join(re.escape(e) for e in _group.experiments) or "(?!)",
            dataset="|".join(re.escape(d) for d in _group.datasets) if _group.datasets else NAME_PATTERN,
            method="|".join(re.escape(m) for m in _group.methods) if _group.methods else wildcard_pattern(),
        priority: measured_priority("train_cell", "{experiment}/{dataset}/{method}/n{n}")
        conda:
            CONDA_ENV
        threads: THREADS
        resources:
            **compute_resources("train_cell", "{experiment}/{dataset}/{method}/n{n}"),
        params:
            mode=lambda w: cell_of(w).mode,
            seeds=" ".join(str(s) for s in _group.seeds),
            best=lambda w, input: f"--best {shlex.quote(str(input.best))}" if input.best else "",
            budget=lambda w: json_param(grid.budget(config, cell_of(w))),
            evaluation=json_param(grid.evaluation(config)),
            device=DEVICE,
            batch="--batch-seeds" if ACP_GRID.get("batched") else "",
            out=lambda w, output: run_folders(output),
            factor=lambda w: grid.latents_factor(config, w.experiment),
        shell:
            "noisyor-bench acp-train-cell --dataset {input.dataset:q} --dataset-name {wildcards.dataset}"
            " --experiment {wildcards.experiment} --method {wildcards.method} --mode {params.mode}"
            " --n-train {wildcards.n} --seeds {params.seeds} {params.best} --budget {params.budget}"
            " --latents-factor {params.factor}"
            " --evaluation {params.evaluation} --device {params.device:q} --threads {threads}"
            " {params.batch} --out-dir {params.out} > {log:q} 2>&1"


# Deterministic cells (SVI/LB-CDI/UB-CDI in inference mode) run one seed in rule
# train_cell_once; the other train_cell rules' patterns match them too, so it takes precedence.
for _once in [g for g in grid.seed_groups(config) if g.methods]:
    for _other in [g for g in grid.seed_groups(config) if not g.methods]:
        workflow.ruleorder(f"train_cell{_once.suffix}", f"train_cell{_other.suffix}")


# A cell whose seeds together the cost model puts over search.max_job_hours
# (acp_costs.per_seed_cells, e.g. the paper grid's Fig. 5 SVI at N_train = 10,000) trains one job per
# seed: the same run directories, logs and benchmarks under train_cell/<cell>/seed<s>. The
# train_cell rules' patterns match its files too, so this one takes precedence.
rule train_cell_seed:
    input:
        dataset=lambda w: R(f"data/{per_seed_cell(w).dataset}.npz"),
        best=per_seed_search_result,
        previous=last_train_segment,
        stale=stale_check(
            lambda w: [RUN(w.cell, seed=w.seed, file="metrics.json")],
            lambda w: R(f"data/{per_seed_cell(w).dataset}.npz"),
            lambda w: grid.budget(config, per_seed_cell(w)),
            lambda w: RUN(w.cell, seed=w.seed, file="metrics.json"),
        ),
    output:
        [RUN("{cell}", seed="{seed}", file=f) for f in RUN_FILES],
    log:
        log_path("train_cell", "{cell}/seed{seed}"),
    benchmark:
        benchmark_path("train_cell", "{cell}/seed{seed}")
    wildcard_constraints:
        cell="|".join(re.escape(p) for p in PER_SEED_CELLS) or "(?!)",
        seed="[0-9]+",
    priority: measured_priority("train_cell", "{cell}/seed{seed}")
    conda:
        CONDA_ENV
    threads: THREADS
    resources:
        **compute_resources("train_cell", "{cell}/seed{seed}"),
    params:
        experiment=lambda w: per_seed_cell(w).experiment,
        dataset=lambda w: per_seed_cell(w).dataset,
        method=lambda w: per_seed_cell(w).method,
        n=lambda w: per_seed_cell(w).n_train,
        mode=lambda w: per_seed_cell(w).mode,
        best=lambda w, input: f"--best {shlex.quote(str(input.best))}" if input.best else "",
        budget=lambda w: json_param(grid.budget(config, per_seed_cell(w))),
        evaluation=json_param(grid.evaluation(config)),
        device=DEVICE,
        out=lambda w, output: run_folders(output),
        factor=lambda w: grid.latents_factor(config, per_seed_cell(w).experiment),
        previous=lambda w, input: previous_option(input.previous),
    shell:
        "noisyor-bench acp-train-cell --dataset {input.dataset:q} --dataset-name {params.dataset}"
        " --experiment {params.experiment} --method {params.method} --mode {params.mode}"
        " --n-train {params.n} --seeds {wildcards.seed} {params.best} --budget {params.budget}"
        " --latents-factor {params.factor}"
        " --evaluation {params.evaluation} --device {params.device:q} --threads {threads}"
        " {params.previous} --out-dir {params.out} > {log:q} 2>&1"


# A per-seed training the cost model puts over search.max_job_hours (the paper grid's Fig. 5
# LB-CDI and SVI at N_train = 10,000) runs as segments, each its own cluster job fitting for its
# share of time from the previous one's exact state (acp_costs.train_segments); the last segment
# is train_cell_seed itself. Bit-identical to one job (docs/cluster.md, "Trainings longer than a job").
rule train_segment:
    input:
        dataset=lambda w: R(f"data/{per_seed_cell(w).dataset}.npz"),
        best=per_seed_search_result,
        previous=previous_train_segment,
    output:
        temp(train_segment_file("{cell}", "{seed}", "{k}")),
    log:
        log_path("train_cell", "{cell}/seed{seed}_segment{k}"),
    benchmark:
        benchmark_path("train_cell", "{cell}/seed{seed}_segment{k}")
    wildcard_constraints:
        cell="|".join(re.escape(p) for p in PER_SEED_CELLS) or "(?!)",
        seed="[0-9]+",
        k="[0-9]+",
    priority: measured_priority("train_cell", "{cell}/seed{seed}_segment{k}")
    conda:
        CONDA_ENV
    threads: THREADS
    resources:
        **compute_resources("train_cell", "{cell}/seed{seed}_segment{k}"),
    params:
        experiment=lambda w: per_seed_cell(w).experiment,
        dataset=lambda w: per_seed_cell(w).dataset,
        method=lambda w: per_seed_cell(w).method,
        n=lambda w: per_seed_cell(w).n_train,
        mode=lambda w: per_seed_cell(w).mode,
        best=lambda w, input: f"--best {shlex.quote(str(input.best))}" if input.best else "",
        budget=lambda w: json_param(grid.budget(config, per_seed_cell(w))),
        evaluation=json_param(grid.evaluation(config)),
        device=DEVICE,
        out=lambda w: RUN(w.cell, seed=w.seed),
        factor=lambda w: grid.latents_factor(config, per_seed_cell(w).experiment),
        segments=train_segments,
        seconds=lambda w: round(acp_costs.segment_seconds(config, per_seed_cell(w))),
        previous=lambda w, input: previous_option(input.previous),
    shell:
        "noisyor-bench acp-train-segment --dataset {input.dataset:q} --dataset-name {params.dataset}"
        " --experiment {params.experiment} --method {params.method} --mode {params.mode}"
        " --n-train {params.n} --seed {wildcards.seed} {params.best} --budget {params.budget}"
        " --latents-factor {params.factor}"
        " --evaluation {params.evaluation} --device {params.device:q} --threads {threads}"
        " --segment {wildcards.k} --segments {params.segments} --seconds {params.seconds}"
        " {params.previous} --out-dir {params.out:q} --out {output:q} > {log:q} 2>&1"


for _group in grid.seed_groups(config):
    workflow.ruleorder("train_cell_seed", f"train_cell{_group.suffix}")


# ---------------------------------------------------------------------------------------
# Real-corpus cells (grids.<g>.text, noisyor_bench.experiments.acp.grid.corpora): one job per
# (experiment, corpus, method, N_train) cell runs all seeds (acp-train-cell --latents K, learning
# mode) with the corpus-scaled hyperparameters of corpus_hparams (no search).
# The synthetic train_cell rule's output pattern also matches text run directories; its
# input functions fail for text experiments, and this makes the choice explicit.
ruleorder: train_cell_corpus > train_cell


rule corpus_hparams:
    input:
        dataset=R("data/{dataset}.npz"),
    output:
        R("hparams/text/{dataset}.json"),
    log:
        log_path("corpus_hparams", "{dataset}"),
    benchmark:
        benchmark_path("corpus_hparams", "{dataset}")
    wildcard_constraints:
        dataset="neurips-titles|reuters",
    priority: UPSTREAM_PRIORITY
    conda:
        CONDA_ENV
    shell:
        "noisyor-bench acp-corpus-hparams --dataset {input.dataset:q} --out {output:q} > {log:q} 2>&1"


rule train_cell_corpus:
    input:
        dataset=R("data/{dataset}.npz"),
        hparams=R("hparams/text/{dataset}.json"),
        stale=stale_check(
            lambda w: text_run_files(w.experiment, w.dataset, w.method, w.n, files=("metrics.json",)),
            lambda w: R(f"data/{w.dataset}.npz"),
            lambda w: corpus_grid.budget(config),
            lambda w: text_run_files(w.experiment, w.dataset, w.method, w.n, files=("metrics.json",))[0],
        ),
    output:
        text_run_files("{experiment}", "{dataset}", "{method}", "{n}"),
    log:
        log_path("train_cell_corpus", "{experiment}/{dataset}/{method}/n{n}"),
    benchmark:
        benchmark_path("train_cell_corpus", "{experiment}/{dataset}/{method}/n{n}")
    wildcard_constraints:
        experiment="table5|classification-K[0-9]+",
        dataset="neurips-titles|reuters",
        method="|".join(corpus_grid.corpus_methods()),
    priority: measured_priority("train_cell_corpus", "{experiment}/{dataset}/{method}/n{n}")
    conda:
        CONDA_ENV
    threads: THREADS
    resources:
        **compute_resources("train_cell_corpus", "{experiment}/{dataset}/{method}/n{n}"),
    params:
        latents=lambda w: corpus_grid.experiment_latents(config, w.experiment),
        seeds=" ".join(str(s) for s in TEXT_SEEDS),
        budget=json_param(corpus_grid.budget(config)),
        evaluation=json_param(grid.evaluation(config)),
        device=DEVICE,
        out=lambda w, output: run_folders(output),
    shell:
        "noisyor-bench acp-train-cell --dataset {input.dataset:q} --dataset-name {wildcards.dataset}"
        " --experiment {wildcards.experiment} --method {wildcards.method} --mode learning"
        " --n-train {wildcards.n} --seeds {params.seeds} --latents {params.latents} --best {input.hparams:q}"
        " --budget {params.budget} --evaluation {params.evaluation} --device {params.device}"
        " --threads {threads} --out-dir {params.out} > {log:q} 2>&1"
