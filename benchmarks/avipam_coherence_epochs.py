"""Coherence against epochs for aviPAM: the fixed epoch budget per corpus.

Why: the ELBO plateau (the project's convergence rule on the training NELBO) stops aviPAM at
31-56 epochs, while topic coherence keeps rising long after the ELBO flattens (AVITM trains
100-300 fixed epochs).  A topic-quality claim needs the topics at a coherence plateau, so the
grids train aviPAM for a fixed number of epochs read off this curve, and a run counts as
converged for such a claim when it trained at least that long (``coherence_plateau`` in the
grid's ``avipam`` section).

``run`` trains one aviPAM method on one corpus (the quick grid's settings with the reconstruction
of aviPAM: encoder batch-norm without gain unless ``--output-norm`` says otherwise) for
``--epochs`` epochs with no early stop, and every ``--every`` epochs keeps the top-10 word ids of
every topic under both top-word rules (``weights``: the decoder weights, the primary rule;
``beta``: the topic-word probabilities, the ablation) -- so that a new coherence reference can
score the same curve without retraining -- plus, per epoch, the training NELBO, the KL term and
the CPU seconds (``time.process_time``: the machine is shared).

``score`` scores every checkpoint of every run against NPMI reference tables
(``name=path.npz``, :class:`noisyor_bench.evaluation.pmi.CooccurrenceTable` files as the workflow
writes them, e.g. ``results/avipam/npmi/20news-external.npz``) and writes a long CSV;
``summarize`` finds, per run, reference and rule, the coherence plateau
(:func:`noisyor_bench.inference.topics.avipam.coherence_plateau`) and where the ELBO rule would
have stopped, and writes a Markdown summary::

    python benchmarks/avipam_coherence_epochs.py run --data results/data --method avipam-pam4 \
        --corpus 20news --seed 0 --epochs 250 --every 10 --out benchmarks/results/avipam_coherence_epochs
    python benchmarks/avipam_coherence_epochs.py score --out benchmarks/results/avipam_coherence_epochs \
        --reference 20news:external=results/avipam/npmi/20news-external.npz \
        --csv benchmarks/results/avipam_coherence_epochs.csv
    python benchmarks/avipam_coherence_epochs.py summarize --csv benchmarks/results/avipam_coherence_epochs.csv \
        --out benchmarks/results/avipam_coherence_epochs --md benchmarks/results/avipam_coherence_epochs.md
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from noisyor_bench.data.corpora.bow import load_corpus
from noisyor_bench.evaluation.coherence import top_word_ids
from noisyor_bench.experiments.avipam import cells
from noisyor_bench.inference.convergence import plateau_reached
from noisyor_bench.infra.io import write_csv_atomic, write_npz_atomic, write_text_atomic

TOP_N = 10
WINDOW, REL_TOL = 5, 1e-3  # the project's ELBO rule (FitBudget defaults)
PLATEAU_TOL = 0.01  # NPMI: half the calibration tolerance (+- 0.02)
CURVE_COLUMNS = ("epoch", "train_nelbo", "train_kl", "cpu_seconds")
SCORE_COLUMNS = ("run", "epoch", "rule", "reference", "npmi")


def quick_section() -> dict[str, Any]:
    config = yaml.safe_load(Path("config/config.yaml").read_text())
    return dict(config["grids"]["quick"]["avipam"])


def run_name(method: str, corpus: str, seed: int, output_norm: str) -> str:
    return f"{method}_{corpus}_{output_norm}_seed{seed}"


def cmd_run(args: argparse.Namespace) -> None:
    from noisyor_bench.experiments.avipam.methods import AVIPAM_STRUCTURES, avipam_config
    from noisyor_bench.inference.topics import avipam
    from noisyor_bench.infra.device import set_threads
    from noisyor_bench.models.topics.pam import make_structure

    set_threads(1)
    counts = load_corpus(Path(args.data) / f"avipam-{args.corpus}.npz").train
    cell = cells.RunCell("small", args.corpus, args.method, args.seed)
    settings = cells.cell_settings(quick_section(), cell)
    kind, sizes = AVIPAM_STRUCTURES[args.method](settings["sizes"])
    structure = make_structure(kind, sizes)
    config = avipam.with_overrides(
        avipam_config(settings),
        max_epochs=args.epochs,
        patience=10**6,
        stop_on_plateau=False,
        **({"output_norm": args.output_norm} if args.output_norm else {}),
    )
    name = run_name(args.method, args.corpus, args.seed, config.output_norm)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, float]] = []
    checkpoints: dict[str, list[np.ndarray]] = {"epoch": [], "weights": [], "beta": []}
    start = time.process_time()

    def hook(record: Any, net: Any) -> None:
        rows.append(
            {
                "epoch": int(record.epoch),
                "train_nelbo": float(record.train_nelbo),
                "train_kl": float(record.extra.get("train_kl", float("nan"))),
                "cpu_seconds": round(time.process_time() - start, 3),
            }
        )
        if record.epoch % args.every == 0 or record.epoch == args.epochs:
            checkpoints["epoch"].append(np.int64(record.epoch))
            for rule in avipam.TOP_WORD_RULES:
                checkpoints[rule].append(top_word_ids(avipam.topic_ranking(net, rule), TOP_N))
            # the curve so far, readable (and scorable) while the run goes on
            write_csv_atomic(out / f"{name}.csv", rows, list(CURVE_COLUMNS))
            write_npz_atomic(
                out / f"{name}.npz",
                epochs=np.asarray(checkpoints["epoch"]),
                **{f"top_{rule}": np.stack(checkpoints[rule]) for rule in avipam.TOP_WORD_RULES},
            )

    avipam.fit_avipam(counts, None, structure, config, seed=args.seed, epoch_hook=hook)
    write_csv_atomic(out / f"{name}.csv", rows, list(CURVE_COLUMNS))


def cmd_score(args: argparse.Namespace) -> None:
    from noisyor_bench.evaluation.pmi import CooccurrenceTable
    from noisyor_bench.infra.io import load_npz
    from noisyor_bench.reporting.avipam.tables import run_npmi

    references: dict[tuple[str, str], Any] = {}
    for item in args.reference:  # corpus:name=path
        key, _, path = item.partition("=")
        corpus, _, name = key.partition(":")
        references[(corpus, name)] = CooccurrenceTable.load(path)
    rows = []
    for npz in sorted(Path(args.out).glob("*.npz")):
        arrays = load_npz(npz)
        corpus = npz.stem.split("_")[1]  # run_name: <method>_<corpus>_<norm>_seed<s>
        for i, epoch in enumerate(arrays["epochs"]):
            for rule in ("weights", "beta"):
                for (ref_corpus, ref), table in references.items():
                    if ref_corpus != corpus:
                        continue
                    score = run_npmi(arrays[f"top_{rule}"][i], table)[0]
                    rows.append(
                        {"run": npz.stem, "epoch": int(epoch), "rule": rule, "reference": ref, "npmi": score}
                    )
    write_csv_atomic(args.csv, rows, list(SCORE_COLUMNS))


def elbo_stop_epoch(nelbo: list[float]) -> int | None:
    """The first epoch at which the project's ELBO rule holds (where ``stop_on_plateau`` stops)."""
    for n in range(WINDOW + 1, len(nelbo) + 1):
        if plateau_reached(nelbo[:n], WINDOW, REL_TOL):
            return n
    return None


def cmd_summarize(args: argparse.Namespace) -> None:
    from noisyor_bench.inference.topics.avipam import coherence_plateau

    with open(args.csv) as handle:
        scores = list(csv.DictReader(handle))
    header = [
        "run",
        "reference",
        "rule",
        "NPMI at epochs " + ", ".join(str(e) for e in args.show),
        "best (epoch)",
        f"coherence plateau (tol {PLATEAU_TOL})",
        "ELBO rule stop",
        "KL/doc at end",
        "CPU s/epoch",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    keys = sorted({(r["run"], r["reference"], r["rule"]) for r in scores})
    for run, ref, rule in keys:
        sel = sorted(
            (int(r["epoch"]), float(r["npmi"]))
            for r in scores
            if (r["run"], r["reference"], r["rule"]) == (run, ref, rule)
        )
        epochs, values = [e for e, _ in sel], [v for _, v in sel]
        at = {e: v for e, v in sel}
        best = int(np.argmax(values))
        with open(Path(args.out) / f"{run}.csv") as handle:
            curve = list(csv.DictReader(handle))
        nelbo = [float(r["train_nelbo"]) for r in curve]
        stop = elbo_stop_epoch(nelbo)
        per_epoch = float(curve[-1]["cpu_seconds"]) / max(len(curve), 1)
        plateau = coherence_plateau(epochs, values, PLATEAU_TOL)
        lines.append(
            f"| {run} | {ref} | {rule} | "
            + " / ".join(f"{at[e]:.3f}" if e in at else "–" for e in args.show)
            + f" | {values[best]:.3f} ({epochs[best]}) | {plateau} | {stop} | {float(curve[-1]['train_kl']):.1f} | {per_epoch:.2f} |"
        )
    write_text_atomic(args.md, "\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run")
    run.add_argument("--data", required=True)
    run.add_argument("--method", default="avipam-pam4")
    run.add_argument("--corpus", default="20news")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--epochs", type=int, default=250)
    run.add_argument("--every", type=int, default=10)
    run.add_argument("--output-norm", default=None, help="override the encoder normalisation (ablation)")
    run.add_argument("--out", required=True)
    score = sub.add_parser("score")
    score.add_argument("--out", required=True)
    score.add_argument("--reference", nargs="+", required=True, help="corpus:name=path.npz")
    score.add_argument("--csv", required=True)
    summ = sub.add_parser("summarize")
    summ.add_argument("--csv", required=True)
    summ.add_argument("--out", required=True)
    summ.add_argument("--md", required=True)
    summ.add_argument("--show", type=int, nargs="+", default=[30, 50, 100, 150, 200, 250])
    args = parser.parse_args()
    {"run": cmd_run, "score": cmd_score, "summarize": cmd_summarize}[args.cmd](args)


if __name__ == "__main__":
    main()
