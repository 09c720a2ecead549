"""CLI: fetch and verify one raw input (download mode of the workflow)."""

from __future__ import annotations

import argparse

from noisyor_bench.data.rawdata import (
    REGISTRY,
    expected_location,
    fetch,
    key_for_relpath,
    resolve_raw_data_dir,
    verify,
)


def cmd_fetch_raw(args: argparse.Namespace) -> int:
    key = args.key or key_for_relpath(args.relpath)
    path = fetch(key, resolve_raw_data_dir(args.raw_data_dir), args.cache_dir)
    print(path)
    return 0


def cmd_verify_raw(args: argparse.Namespace) -> int:
    """Verify one raw input against its pin and write a small stamp (the rule verify_raw).

    The workflow's derived files depend on these stamps, so a corrupted raw file fails this
    job, whose only output is the stamp, before any job that would delete derived outputs.
    """
    from noisyor_bench.infra.hashing import sha256_file
    from noisyor_bench.infra.io import write_json_atomic

    path = args.path or expected_location(args.key, resolve_raw_data_dir(args.raw_data_dir), args.cache_dir)
    how = verify(args.key, path)
    write_json_atomic(
        args.out, {"key": args.key, "path": str(path), "matched": how, "sha256": sha256_file(path)}
    )
    print(f"{path}: verified ({how})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "verify-raw", help="verify one raw input against its pinned sha256 and write a stamp file"
    )
    p.add_argument("--key", required=True, choices=sorted(REGISTRY), help="registry key of the raw input")
    p.add_argument(
        "--path",
        help="the raw file (default: the key's file in the mirror, --raw-data-dir or $NOISYOR_RAW_DATA, "
        "else in --cache-dir)",
    )
    p.add_argument("--raw-data-dir", help="raw-data mirror (default: $NOISYOR_RAW_DATA)")
    p.add_argument("--cache-dir", default="results/raw", help="download cache, without a mirror")
    p.add_argument("--out", required=True, help="stamp file written when the file matches its pin")
    p.set_defaults(func=cmd_verify_raw)

    p = sub.add_parser(
        "fetch-raw", help="fetch a raw input into the cache (or check it in the mirror) and verify it"
    )
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--key", choices=sorted(REGISTRY), help="registry key of the raw input")
    which.add_argument(
        "--relpath", help="path of the raw input inside a mirror, e.g. mnist/t10k-images-idx3-ubyte.gz"
    )
    p.add_argument("--raw-data-dir", help="raw-data mirror (default: $NOISYOR_RAW_DATA, else download)")
    p.add_argument("--cache-dir", default="results/raw", help="where downloads are stored")
    p.set_defaults(func=cmd_fetch_raw)
