"""Every writer names its own file on a full disk; a refused read says "cannot read".

The writers that once relied on the command line's catch-all (which could only say "a file")
write into a real, full tmpfs here: synthetic data, a LoRA checkpoint, the precision check's
figures, tables, figures, the export's JSON and DuckDB's COPY. Each must raise a DiskError
naming the file it was writing (never its hidden temporary sibling), leave no partial file,
and keep the file that was there before. Skipped where a tmpfs cannot be mounted.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.diskio import uncaught_os_error
from crsbench.core.errors import DiskError


def _flat(text: str) -> str:
    return "".join(text.split())


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, filled to the last byte (an old table kept in it), then unmounted."""
    folder = tmp_path / "full"
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")
    try:
        (folder / "tables").mkdir()
        (folder / "tables" / "leaderboard.csv").write_text("encoder,crs\nold,0.5\n")
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        finally:
            os.close(fd)
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


def _synth(root: Path) -> Path:
    from crsbench.datasets.synthetic import write_all

    write_all(root / "synth", size={"isic2019": 60, "side": 32}, names=("isic2019",))
    return root / "synth" / "isic2019"


def _checkpoint(root: Path) -> Path:
    import torch

    from crsbench.adapt import save_checkpoint

    path = root / "lora" / "adapter.pt"
    save_checkpoint(path, {"lora_A": torch.zeros(64, 1024)})
    return path


def _precision(root: Path) -> Path:
    from crsbench.features.precision import write_figures

    write_figures(root / "cache", "ab" * 32, {"encoder": "pixel"}, {"cosine": [0.5] * 20_000})
    return root / "cache" / "precision" / f"{'ab' * 32}.json"


def _tables(root: Path) -> Path:
    import pandas as pd

    from crsbench.report.leaderboard_files import write_tables

    write_tables(pd.DataFrame({"encoder": ["x"] * 5000, "crs": [0.7] * 5000}), root / "tables")
    return root / "tables" / "leaderboard.csv"


def _figure(root: Path) -> Path:
    from crsbench.report.plotstyle import pyplot, save

    fig, ax = pyplot().subplots()
    ax.plot(range(100))
    save(fig, root / "figures", "curve", "a curve")
    return root / "figures" / "curve.png"


def _export_json(root: Path) -> Path:
    from crsbench.store.export import write_json_atomic

    write_json_atomic(root / "export" / "meta.json", {"config_json": "x" * 100_000})
    return root / "export" / "meta.json"


def _duckdb_copy(root: Path) -> Path:
    import duckdb

    from crsbench.store.export import export_query

    with duckdb.connect() as con:
        export_query(con, "SELECT range AS i, 'row ' || range AS t FROM range(200000)",
                     root / "export" / "runs.csv", "csv")  # fmt: skip
    return root / "export" / "runs.csv"


WRITERS: dict[str, Callable[[Path], Path]] = {
    "synth": _synth, "lora_checkpoint": _checkpoint, "precision_figures": _precision,
    "tables": _tables, "figure": _figure, "export_json": _export_json,
    "duckdb_copy": _duckdb_copy,
}  # fmt: skip
#: The file each writer was writing when the disk refused (synth: the dataset folder or a file
#: under it, whichever the failing call named).
EXPECTED = {
    "synth": "synth/isic2019", "lora_checkpoint": "lora/adapter.pt",
    "precision_figures": f"cache/precision/{'ab' * 32}.json", "tables": "tables/leaderboard.csv",
    "figure": "figures/curve.png", "export_json": "export/meta.json",
    "duckdb_copy": "export/runs.csv",
}  # fmt: skip


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_writer_on_a_full_disk_names_its_file(full_disk: Path, writer: str) -> None:
    with pytest.raises(DiskError) as err:
        WRITERS[writer](full_disk)
    message = str(err.value)
    expected = str(full_disk / EXPECTED[writer])
    assert message.startswith(f"disk full: cannot write {expected}"), message
    assert ".tmp" not in message and ".partial-" not in message and "a file" not in message
    assert err.value.kind == "full"
    hidden = [p.name for p in full_disk.rglob(".*")]
    assert hidden == [], hidden  # no temporary sibling, no partial dataset folder left
    assert (full_disk / "tables" / "leaderboard.csv").read_text() == "encoder,crs\nold,0.5\n"
    assert not (full_disk / EXPECTED[writer]).is_file() or writer == "tables"


# -- a refused read is a read ----------------------------------------------------------------------


def test_a_permission_error_on_an_existing_file_says_cannot_read(tmp_path: Path) -> None:
    existing = tmp_path / "labels.csv"
    existing.write_text("path,label\n")
    read = uncaught_os_error(PermissionError(errno.EACCES, "Permission denied", str(existing)))
    assert read is not None and str(read).startswith(f"cannot read {existing}: permission denied")
    assert "write" not in str(read).split(".")[0]
    new = tmp_path / "out" / "new.csv"
    write = uncaught_os_error(PermissionError(errno.EACCES, "Permission denied", str(new)))
    assert write is not None and str(write).startswith(f"cannot write {new}: permission denied")
    full = uncaught_os_error(OSError(errno.ENOSPC, "No space left on device", str(existing)))
    assert full is not None and str(full).startswith(f"disk full: cannot write {existing}")


def test_a_config_that_may_not_be_read_is_named_as_a_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("encoders: [pixel]\ndatasets: {isic2019: {root: data}}\n")
    real = Path.read_bytes

    def refused(self: Path) -> bytes:
        if self == config:  # root reads any file: the refusal a normal user gets, simulated
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", refused)
    result = CliRunner().invoke(app, ["status", str(config)])
    said = _flat(result.output)
    assert result.exit_code == 3, result.output
    assert _flat(f"error: cannot read {config}: permission denied") in said
    assert "cannotwrite" not in said and "Traceback" not in result.output
    assert config.read_text(encoding="utf-8").startswith("encoders")  # untouched
