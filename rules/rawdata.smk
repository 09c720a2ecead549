# Stage 0: raw inputs. With a local mirror (config raw_data_dir or $NOISYOR_RAW_DATA) rules
# read the mirror directly and each command verifies the sha256 of what it reads; without
# one, this rule downloads each input from its public source into <results>/raw and verifies it.
if RAW_DATA_DIR is None:

    rule fetch_raw:
        output:
            R("raw/{relpath}"),
        params:
            cache=lambda w: CACHE_DIR,
        conda:
            CONDA_ENV
        log:
            log_path("fetch_raw", "{relpath}"),
        benchmark:
            benchmark_path("fetch_raw", "{relpath}")
        shell:
            "noisyor-bench fetch-raw --relpath {wildcards.relpath} --cache-dir {params.cache} > {log} 2>&1"
