"""docs/add_perturbation.md does what it says: a perturbation registered in a user's module,
with its own severities, is applied, keys its cached features by its source, is named in a
config, runs through ``crsbench run``, lands in the store as an extra condition and is scored
beside R (``robustness_drop_extra``), worked by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from .docs_support import DOCS, REPO, run_script, write_examples

PAGE = "add_perturbation.md"
SCRIPTS = ["my_perturbations.py", "check_my_perturbation.py", "make_data.py",
           "read_my_perturbation.py"]  # fmt: skip


def _block(lang: str, title: str | None = None) -> str:
    text = (DOCS / PAGE).read_text(encoding="utf-8")
    head = f'```{lang} title="{title}"\n' if title else f"```{lang}\n"
    return re.search(re.escape(head) + r"(.*?)```", text, re.S).group(1)


def test_the_perturbation_applies_its_severities_and_its_source_keys_the_cache(tmp_path):
    assert write_examples(PAGE, tmp_path) == SCRIPTS
    out = run_script("check_my_perturbation.py", tmp_path).splitlines()
    assert out[0] == "[[0, 16, 64, 255]]"  # round(255 (x/255)^2): 0, 16.06, 64.25, 255
    assert out[1] == "(('gamma', 1), ('gamma', 2), ('gamma', 3))"  # jpeg is the paper's
    assert out[2] == "()"  # registered for dermoscopy and fundus only
    jpeg, gamma = out[3], out[4]
    assert gamma.startswith(jpeg + ":my_perturbations:")
    module = tmp_path / "my_perturbations.py"  # an edit of the module: a new key for gamma only
    module.write_text(module.read_text().replace("3: 3.0}", "3: 3.5}"))
    edited = run_script("check_my_perturbation.py", tmp_path).splitlines()
    assert edited[3] == jpeg and edited[4] != gamma


def test_a_bad_severity_value_is_refused_when_the_module_is_imported(tmp_path):
    write_examples(PAGE, tmp_path)
    module = tmp_path / "my_perturbations.py"
    module.write_text(module.read_text().replace("2: 2.0,", "2: 0.5,"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "src")])}
    done = subprocess.run([sys.executable, "-c", "import my_perturbations"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0
    message = "perturbation 'gamma': severities[2]: gamma must be a number in (1, 5]. Got 0.5"
    assert message in done.stderr


@pytest.mark.slow  # a whole run (extraction of 4 conditions, probes, recalibration): ~15 s quiet
def test_the_config_runs_it_and_the_store_holds_its_rows_as_extras(tmp_path):
    assert write_examples(PAGE, tmp_path) == SCRIPTS
    (tmp_path / "my_perturbation.yaml").write_text(_block("yaml", "my_perturbation.yaml"))
    commands = [line.split() for line in _block("bash").splitlines() if line.strip()]
    assert commands == [["python", "make_data.py"], ["crsbench", "run", "my_perturbation.yaml"],
                        ["python", "read_my_perturbation.py"],
                        ["crsbench", "score", "--store", "results/gamma"]]  # fmt: skip
    run_script("make_data.py", tmp_path)
    _crsbench(["run", "my_perturbation.yaml", "--no-progress"], tmp_path)
    out = run_script("read_my_perturbation.py", tmp_path).splitlines()
    assert out == ["clean 0 clean", "gamma 1 extra", "gamma 2 extra", "gamma 3 extra",
                   "jpeg 1 paper", "jpeg 2 paper", "jpeg 3 paper"]  # fmt: skip
    _crsbench(["score", "--store", "results/gamma"], tmp_path)  # without the module
    import pandas as pd

    from crsbench.store.reader import load_runs

    runs = load_runs(tmp_path / "results" / "gamma")
    main = runs[(runs["probe"] == "logistic") & (runs["recalibrator"] == "none")]
    clean = main.loc[main["condition"] == "clean", "auroc"].item()
    drops = clean - main.loc[main["condition"] == "gamma", "auroc"].to_numpy()
    board = pd.read_csv(tmp_path / "results" / "gamma" / "scores" / "leaderboard.csv")
    expected = 0.5 * drops.mean() + 0.5 * drops.max()  # the page's formula, by hand
    assert board["robustness_drop_extra"].item() == pytest.approx(expected, abs=1e-12)
    assert board["robustness_drop"].isna().all()  # R needs the 15 paper conditions


def _crsbench(argv: list[str], cwd) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TYPER_USE_RICH": "0"}
    done = subprocess.run([sys.executable, "-c", "from crsbench.cli import main; main()", *argv],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


SPAWNED = """
import sys

import numpy as np
from torch.utils.data import DataLoader, Dataset

from crsbench.encoders.plugins import load_encoder_modules
from crsbench.features.runner import decode_worker_init
from crsbench.perturb import apply


class Gamma(Dataset):
    def __len__(self):
        return 1

    def __getitem__(self, i):
        return apply(np.array([[64, 128]], dtype=np.uint8), "gamma", 2, "img").tolist()


if __name__ == "__main__":
    load_encoder_modules(["my_perturbations"])  # as the config's encoder_modules are
    init = decode_worker_init() if sys.argv[1] == "init" else None
    loader = DataLoader(Gamma(), batch_size=None, num_workers=1, worker_init_fn=init,
                        multiprocessing_context="spawn")
    print(next(iter(loader)))
"""


@pytest.mark.slow  # two spawned workers import torch and crsbench: ~28 s on the shared machine
def test_a_spawned_decode_worker_knows_the_perturbation(tmp_path):
    write_examples(PAGE, tmp_path)
    (tmp_path / "spawned.py").write_text(SPAWNED, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO / "src")])}

    def spawned(mode: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "spawned.py", mode], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    bare = spawned("bare")  # what the worker init is for: without it the name is unknown
    assert bare.returncode != 0 and "unknown perturbation 'gamma'" in bare.stderr
    done = spawned("init")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[[16, 64]]"
