"""docs/add_encoder_package.md does what it says: an encoder defined outside crsbench, named by
a config's ``encoder_modules`` or installed with a ``crsbench.encoders`` entry point, is checked
by ``doctor``, runs a cell with ``run``, is counted by ``status`` and listed by ``encoders list``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .docs_support import DOCS, REPO, write_examples

PAGE = "add_encoder_package.md"


def _block(lang: str, title: str | None = None) -> str:
    text = (DOCS / PAGE).read_text(encoding="utf-8")
    head = f'```{lang} title="{title}"\n' if title else f"```{lang}\n"
    return re.search(re.escape(head) + r"(.*?)```", text, re.S).group(1)


def _crsbench(argv: list[str], cwd: Path, pythonpath: list[Path] = ()) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*map(str, pythonpath), str(REPO / "src")]),
           "TYPER_USE_RICH": "0", "COLUMNS": "200"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", "from crsbench.cli import main; main()", *argv],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, f"crsbench {argv} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page's module and config in a folder, with tiny synthetic ISIC data under data/."""
    from crsbench.datasets.synthetic import write_all

    folder = tmp_path_factory.mktemp("lab")
    assert write_examples(PAGE, folder) == ["lab_encoders.py"]
    (folder / "lab.yaml").write_text(_block("yaml", "lab.yaml"), encoding="utf-8")
    write_all(folder / "data", size={"isic2019": 60, "side": 48}, seed=0, names=("isic2019",))
    return folder


@pytest.mark.slow  # a whole run (extraction, probes, recalibration): ~30 s quiet
def test_a_config_module_is_checked_run_and_counted_from_another_folder(lab, tmp_path):
    commands = [line.split("#")[0].split() for line in _block("bash").splitlines() if line.strip()]
    assert [c[1] for c in commands] == ["doctor", "run", "status", "score"]
    config = str(lab / "lab.yaml")  # started elsewhere: the module is found beside the config
    doctor = _crsbench(["doctor", config, "--no-hub-check"], tmp_path)
    assert "everything found" in doctor
    ran = _crsbench(["run", config, "--no-progress"], tmp_path)
    assert re.search(r"wrote [1-9]\d* run records", ran), ran
    status = _crsbench(["status", config, "--json"], tmp_path)
    assert "lab_cnn" in status
    from crsbench.store.reader import load_runs

    assert set(load_runs(lab / "results" / "lab")["encoder"]) == {"lab_cnn", "pixel"}


def test_an_entry_point_makes_the_encoder_known_to_every_command(lab, tmp_path):
    toml = _block("toml")
    name, value = re.search(r'^(\w+) = "([\w.:]+)"$', toml, re.M).groups()
    site = tmp_path / "site"  # an installed distribution, as pip leaves it
    info = site / "lab_pkg-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-pkg\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[crsbench.encoders]\n{name} = {value}\n")
    (site / "lab_encoders.py").write_text((lab / "lab_encoders.py").read_text())
    listed = _crsbench(["encoders", "list"], tmp_path, [site])
    assert re.search(r"^lab_cnn\t", listed, re.M), listed
    config = tmp_path / "plain.yaml"  # no encoder_modules: the entry point is enough
    text = (lab / "lab.yaml").read_text().replace("encoder_modules: [lab_encoders]\n", "")
    config.write_text(text.replace("data/isic2019", str(lab / "data" / "isic2019"))
                      .replace("results/lab", str(tmp_path / "out")))  # fmt: skip
    assert "everything found" in _crsbench(["doctor", str(config), "--no-hub-check"], tmp_path,
                                           [site])  # fmt: skip


def test_a_module_that_cannot_be_imported_is_named_before_anything_is_written(lab, tmp_path):
    config = tmp_path / "broken.yaml"
    config.write_text((lab / "lab.yaml").read_text().replace("[lab_encoders]", "[no_such_mod]")
                      .replace("results/lab", str(tmp_path / "out")))  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", "from crsbench.cli import main; main()", "run",
                           str(config)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "encoder_modules: module 'no_such_mod' could not be imported" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
