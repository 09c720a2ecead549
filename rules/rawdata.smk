# Stage 0: raw inputs. With a local mirror (config raw_data_dir or $NOISYOR_RAW_DATA) rules
# read the mirror directly and each command verifies the sha256 of what it reads; without
# one, this rule downloads each input from its public source into <results>/raw and verifies it.
# The mirror's location is in no rule's params or input paths (rules/common.smk, RAW_DATA_DIR):
# the commands read it from $NOISYOR_RAW_DATA.
from noisyor_bench.data.rawdata import key_pattern

RAW_KEY_PATTERN = key_pattern()


if RAW_DATA_DIR is None:

    rule fetch_raw:
        output:
            R("raw/{relpath}"),
        log:
            log_path("fetch_raw", "{relpath}"),
        benchmark:
            benchmark_path("fetch_raw", "{relpath}")
        conda:
            CONDA_ENV
        params:
            cache=lambda w: CACHE_DIR,
        shell:
            "noisyor-bench fetch-raw --relpath {wildcards.relpath} --cache-dir {params.cache:q} > {log:q} 2>&1"


# Raw inputs are verified in a step of their own: every rule that reads raw files also takes
# their stamps (raw_stamps in common.smk) as input.  A corrupted (newer) mirror file makes
# Snakemake schedule this job and the derived ones; this job fails on the checksum, its only
# output is the stamp, and the derived jobs never start -- Snakemake removes a job's outputs
# only when the job itself starts, so the valid derived files (and their sidecars) are kept.
rule verify_raw:
    input:
        verify_raw_input,
    output:
        R("raw_verified/{key}.json"),
    log:
        log_path("verify_raw", "{key}"),
    benchmark:
        benchmark_path("verify_raw", "{key}")
    wildcard_constraints:
        key=RAW_KEY_PATTERN,
    priority: UPSTREAM_PRIORITY
    conda:
        CONDA_ENV
    params:
        cache=lambda w: CACHE_DIR,
    shell:
        "noisyor-bench verify-raw --key {wildcards.key} --cache-dir {params.cache:q} --out {output:q} > {log:q} 2>&1"
