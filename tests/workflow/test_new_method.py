"""A new amortized method, added as a newcomer would: one registry entry and one module.

The test copies the checkout, adds ``acp-x`` (ACP under another name) to the method registry
with a module of its own, gives it a cell of the smoke grid's Table 4 and ACP's search space in
the copy's config, and checks that what the workflow knows about amortized, searched methods
follows the entry alone: its training jobs hold a GPU under profiles/gpu, the cost model counts
an epoch as at least ``min_epoch_steps`` batches, and a claim that reads its cells names its
seeds and search draws below the paper's as a protocol deviation.  The registry is imported by
name wherever these facts are read, so the entry must be in the copy's source (a monkeypatch of
this process's registry would not reach the names already imported, nor the Snakemake run).
"""

from __future__ import annotations

import copy
import json

import pytest
import yaml
from checkout_copy import checkout_env, copy_checkout, run_python
from conftest import REPO
from test_profiles import dry_run, method_resources

from noisyor_bench.experiments.config import load_yaml, validate_config
from noisyor_bench.inference.noisyor.registry import METHODS, SEARCHED, MethodInfo
from noisyor_bench.infra.errors import ConfigError

NEW = "acp-x"

ENTRY = '    MethodInfo("acp-x", "ACP-X", "acpx:ACPX", True, "#56B4E9", "P"),  # sky blue\n'

MODULE = '''"""ACP under another name: the method tests/workflow/test_new_method.py adds."""

from noisyor_bench.inference.noisyor.acp import ACP


class ACPX(ACP):
    name = "acp-x"
'''

REGISTERED = """
import json
import noisyor_bench
from noisyor_bench.inference.noisyor import registry as r
print(noisyor_bench.__file__)
cls = r.get_method("acp-x")
print(json.dumps(["acp-x" in r.AMORTIZED, "acp-x" in r.SEARCHED, cls.__name__, cls.amortized]))
"""

COSTS = """
import json
from noisyor_bench.experiments.acp import costs
print(json.dumps({m: [costs.effective_rows(m, 10, {}), costs.is_cuda_method(m)] for m in ("acp", "acp-x", "svi")}))
"""

CLAIM = """
import pandas as pd
from noisyor_bench.reporting.acp import synthetic_claims as SC

nelbo = {"acp": (150.0, 150.2, 150.1), "avi": (160.0, 160.3, 160.2), "acp-x": (155.0, 155.1, 155.3)}
table4 = pd.DataFrame(
    [
        {"artifact": "table4", "dataset": "syn-random-7", "n_train": 1000, "method": m, "status": "measured",
         "nelbo_values": ";".join(f"{s}:{v!r}" for s, v in enumerate(vs)), "n_seeds": len(vs)}
        for m, vs in nelbo.items()
    ]
)
search = pd.DataFrame(
    [
        {"experiment": "table4", "dataset": "syn-random-7", "method": m, "n_train": 1000, "draw": d, "n_inits": 2}
        for m in nelbo
        for d in range(10)
    ]
)
claim = SC.claim_acp_lowest_table4({"table4": table4, "search": search})
print(claim.verdict)
print(claim.protocol_deviation)
print(claim.numbers)
"""


def _add_method(checkout) -> None:
    """The registry entry (last in METHODS) and the module beside it."""
    folder = checkout / "workflow" / "noisyor_bench" / "inference" / "noisyor"
    registry = folder / "registry.py"
    text = registry.read_text()
    start = text.index("METHODS: tuple[MethodInfo, ...] = (\n")
    end = text.index("\n)\n", start) + 1
    registry.write_text(text[:end] + ENTRY + text[end:])
    (folder / "acpx.py").write_text(MODULE)


def _add_cell(checkout) -> None:
    """A Table 4 cell of the smoke grid and ACP's search space for the new method."""
    path = checkout / "config" / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["grids"]["smoke"]["acp"]["experiments"]["table4"]["runs"][NEW] = [200]
    cfg["search_spaces"][NEW] = copy.deepcopy(cfg["search_spaces"]["acp"])
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    dest = tmp_path_factory.mktemp("method") / "checkout"
    copy_checkout(REPO, dest)
    _add_method(dest)
    _add_cell(dest)
    return dest


def test_the_copy_registers_the_method(newcomer) -> None:
    out = run_python(newcomer, REGISTERED)
    where, facts = out.splitlines()
    assert str(newcomer) in where, "the copy's package must be the one imported"
    assert json.loads(facts) == [True, True, "ACPX", True]


def test_its_training_jobs_hold_a_gpu(newcomer, tmp_path) -> None:
    out = dry_run("gpu", tmp_path / "results", "smoke", checkout=newcomer, env=checkout_env(newcomer))
    for rule in ("search_chunk", "train_cell"):
        new = [res for method, res in method_resources(out, rule) if method == NEW]
        assert new and all("gpu=1" in res for res in new), rule
    cpu = [res for method, res in method_resources(out, "train_cell") if method == "svi"]
    assert cpu and all("gpu=1" not in res for res in cpu)  # the per-datapoint methods stay on the CPU


def test_the_cost_model_floors_its_epochs(newcomer) -> None:
    rows = json.loads(run_python(newcomer, COSTS))
    assert rows[NEW] == rows["acp"] == [20 * 128, True]  # min_epoch_steps x batch_size (defaults)
    assert rows["svi"] == [10, False]


def test_its_claims_name_the_search_deviation(newcomer) -> None:
    verdict, deviation, numbers = run_python(newcomer, CLAIM).splitlines()
    # ACP lowest at N_train = 1,000 only: 1 of the paper's 11 comparisons, so not yet decided
    assert verdict == "inconclusive" and numbers.startswith("1 of 11 comparisons tested")
    assert "seeds 3/5 (ACP, ACP-X, AVI)" in deviation
    assert "search 10/100 draws x 2 inits (ACP, ACP-X, AVI)" in deviation


# ------------------------------------------------------------------ the registry's own facts
def test_searched_defaults_to_amortized_and_can_be_stated() -> None:
    amortized = MethodInfo("x", "X", "m:C", True, "#000000", "o")
    classical = MethodInfo("y", "Y", "m:C", False, "#000000", "o")
    stated = MethodInfo("z", "Z", "m:C", True, "#000000", "o", searched=False)
    assert (amortized.searched, classical.searched, stated.searched) == (True, False, False)
    assert SEARCHED == tuple(m.name for m in METHODS if m.searched)
    # the paper searched AVI and ACP; ACP-SG, the ablation of ACP, searches its space
    assert set(SEARCHED) == {"avi", "acp", "acp-sg"}


def test_the_config_cannot_search_a_method_the_registry_runs_with_defaults() -> None:
    cfg = load_yaml(REPO / "config" / "config.yaml")
    cfg["search_spaces"]["svi"] = copy.deepcopy(cfg["search_spaces"]["acp"])
    with pytest.raises(ConfigError, match=r"search_spaces: 'svi' run with their documented defaults"):
        validate_config(cfg)
