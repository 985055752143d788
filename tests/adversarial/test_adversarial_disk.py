"""A full, read-only or forbidden disk: every write names its path, nothing half-written stays.

Most cases simulate the refusal (an ``OSError`` with ENOSPC / EROFS raised where the write
happens: root ignores permissions, and a test must not fill a real disk); the two that need the
real thing (a memory-mapped write into a full tmpfs, a read-only mount) mount a small tmpfs and
are skipped where mounting is not permitted.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_fixtures import one_record_store
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.errors import DiskError
from crsbench.features.cache import FeatureCache

HASH = "cd" * 32


def _flat(text: str) -> str:
    """The output without whitespace (the console folds long paths anywhere)."""
    return "".join(text.split())


def _invoke(*args: object):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result, _flat(result.output)


def _store(folder: Path) -> Path:
    return one_record_store(folder, HASH)


def _under(path: object, folder: Path) -> bool:
    try:
        return Path(os.fsdecode(path)).resolve().is_relative_to(folder.resolve())  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Folders appended to the yielded list refuse every write with EROFS, as a read-only
    mount does (open for writing, os.open with a write flag, mkdir, rename)."""
    folders: list[Path] = []

    def refuse(path: object) -> None:
        if any(_under(path, f) for f in folders):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))  # type: ignore[arg-type]

    real_open, real_os_open, real_mkdir, real_replace = io.open, os.open, os.mkdir, os.replace

    def fake_open(file, mode="r", *args, **kwargs):
        if isinstance(file, str | os.PathLike) and set(str(mode)) & set("wax+"):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def fake_os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def fake_mkdir(path, *args, **kwargs):
        refuse(path)
        return real_mkdir(path, *args, **kwargs)

    def fake_replace(src, dst, *args, **kwargs):
        refuse(dst)
        return real_replace(src, dst, *args, **kwargs)

    for target, name, fake in ((io, "open", fake_open), (builtins, "open", fake_open),
                               (os, "open", fake_os_open), (os, "mkdir", fake_mkdir),
                               (os, "replace", fake_replace)):  # fmt: skip
        monkeypatch.setattr(target, name, fake)
    yield folders


def _mount_tmpfs(folder: Path, options: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                          capture_output=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()})")


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs (skipped where mounting is not permitted)."""
    folder = tmp_path / "small"
    _mount_tmpfs(folder, "size=1m")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


# -- the feature cache: a full disk is named, never a SIGBUS ---------------------------------------


def _entry_files(cache: FeatureCache) -> list[str]:
    return sorted(p.name for p in (cache.root / "objects").rglob("*") if p.is_file())


def test_feature_write_on_a_full_disk_names_the_file_and_the_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_space(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", no_space)
    cache = FeatureCache(tmp_path / "cache")
    filled: list[bool] = []
    with pytest.raises(DiskError) as err:
        cache.put_streaming("ab" * 32, (512, 1024), "float32", [str(i) for i in range(512)],
                            {"k": 1}, lambda out: filled.append(True))  # fmt: skip
    message = str(err.value)
    assert message.startswith("disk full: cannot write ") and str(cache.root / "objects") in message
    assert "needs 2.0 MiB" in message and "MiB free on that file system" in message
    assert filled == []  # the map was never written: no page of it could fault
    assert _entry_files(cache) == [] and cache.get("ab" * 32).status == "miss"


def test_feature_write_into_a_full_tmpfs_is_an_error_not_a_bus_error(tmpfs: Path) -> None:
    script = textwrap.dedent(f"""
        import numpy as np
        from crsbench.core.errors import DiskError
        from crsbench.features.cache import FeatureCache
        cache = FeatureCache({str(tmpfs / "cache")!r})
        try:
            cache.put({"ef" * 32!r}, np.ones((1024, 1024), "float32"),
                      [str(i) for i in range(1024)], {{}})
        except DiskError as exc:
            print("refused:", exc)
        """)  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, (done.returncode, done.stderr)  # -7 would be the SIGBUS
    said = _flat(done.stdout)
    assert said.startswith("refused:diskfull:cannotwrite" + _flat(str(tmpfs / "cache")))
    assert "needs4.0MiB" in said
    leftover = [p for p in (tmpfs / "cache" / "objects").rglob("*") if p.is_file()]
    assert leftover == []


# -- score, analyze, report and run into a read-only or full folder ---------------------------------


@pytest.mark.parametrize("command", ["score", "analyze", "report"])
def test_results_into_a_read_only_folder_name_it(
    tmp_path: Path, read_only: list[Path], command: str
) -> None:
    store = _store(tmp_path / "out")
    out = tmp_path / "readonly"
    out.mkdir()
    read_only.append(out)
    result, said = _invoke(command, "--store", store, "--out", out, "--replicates", 1)
    assert result.exit_code == 3, result.output
    assert (
        "Traceback" not in result.output
        and result.exception is None
        or isinstance(result.exception, SystemExit)
    )
    assert _flat(f"cannot write {out}") in said and "thefilesystemisread-only" in said
    assert list(out.iterdir()) == []


def test_score_into_a_read_only_mount(tmp_path: Path) -> None:
    store = _store(tmp_path / "out")
    out = tmp_path / "ro"
    _mount_tmpfs(out, "ro,size=1m")
    try:
        result, said = _invoke("score", "--store", store, "--out", out, "--replicates", 0)
    finally:
        subprocess.run(["umount", str(out)], check=False)
    assert result.exit_code == 3, result.output
    assert _flat(f"cannot write {out}/.crsbench-output: the file system is read-only") in said


def test_score_on_a_full_disk_keeps_no_half_written_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import crsbench.report.leaderboard_files as leaderboard

    store = _store(tmp_path / "out")
    out = tmp_path / "scores"
    out.mkdir()

    def full(board, folder):
        (Path(folder) / "leaderboard.csv").write_text("encoder,crs\npix")  # cut short
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # write() names no file

    monkeypatch.setattr(leaderboard, "write_tables", full)
    result, said = _invoke("score", "--store", store, "--out", out, "--replicates", 0)
    assert result.exit_code == 3, result.output
    assert _flat(f"disk full: cannot write {out}") in said and "MiBfree" in said
    assert not (out / "leaderboard.csv").exists() and (out / ".crsbench-output").is_file()


def test_run_into_a_read_only_folder_names_it(
    tmp_path: Path, read_only: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    import crsbench.runs.pipeline as pipeline

    data = tmp_path / "datasets" / "isic"
    data.mkdir(parents=True)
    config = tmp_path / "config.yaml"
    config.write_text(f"encoders: [pixel]\ndatasets:\n  isic2019: {{root: {data}}}\n")
    monkeypatch.setattr(pipeline, "_runnable", lambda cfg, emit, skip: (cfg, []))
    out = tmp_path / "results"
    out.mkdir()
    read_only.append(out)
    result, said = _invoke("run", config, "--out", out, "--no-progress")
    assert result.exit_code == 3, result.output
    assert _flat(f"cannot write {out}/.crsbench-output: the file system is read-only") in said
    assert list(out.iterdir()) == []


def test_an_uncaught_refused_write_is_named_by_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import crsbench.cli.run_commands as run_commands

    def forbidden(path, out):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp_path / "x.json"))

    monkeypatch.setattr(run_commands, "_config", forbidden)
    result, said = _invoke("status", tmp_path / "config.yaml")
    assert result.exit_code == 3, result.output
    assert _flat(f"cannot write {tmp_path / 'x.json'}: permission denied") in said


def test_the_store_on_a_full_disk_is_not_called_damaged(tmp_path: Path) -> None:
    from crsbench.store.files import damaged_store

    err = damaged_store(tmp_path / "results.duckdb",
                        RuntimeError("IO Error: Could not write file: No space left on device"))  # fmt: skip
    assert isinstance(err, DiskError) and "damaged" not in str(err)
    assert str(err).startswith(f"disk full: cannot write {tmp_path / 'results.duckdb'}")


# -- a real DuckDB write into a real full disk: exit 3, the store named, the old content kept -----


def test_run_whose_store_fills_a_real_tmpfs_exits_3_and_keeps_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from store_fixtures import run_record

    import crsbench.runs.pipeline as pipeline
    from crsbench.datasets.synthetic import write_all
    from crsbench.store.writer import ResultsStore

    write_all(tmp_path / "data", size={"isic2019": 60, "side": 32}, names=("isic2019",))
    out = tmp_path / "full" / "results"
    _mount_tmpfs(out.parent, "size=4m")  # room for the store, not for the big batch
    config = tmp_path / "config.yaml"
    config.write_text(f"encoders: [pixel]\ncache_dir: {tmp_path / 'cache'}\n"
                      f"datasets:\n  isic2019: {{root: {tmp_path / 'data' / 'isic2019'}}}\n")  # fmt: skip
    pad = "x" * 16000  # 800 records of 16 kB details: about 13 MB, three times the disk

    def frozen_stage(run, store, todo) -> None:
        store.append([run_record(0, run.cfg_hash)])  # committed before the disk fills
        store.append([dataclasses.replace(run_record(i + 1, run.cfg_hash),
                                          details={"pad": f"{pad}{i}"}) for i in range(800)])  # fmt: skip

    monkeypatch.setattr(pipeline, "_runnable", lambda cfg, emit, skip: (cfg, []))
    monkeypatch.setattr(pipeline, "_frozen_stage", frozen_stage)
    try:
        result, said = _invoke("run", config, "--out", out, "--no-progress")
        assert result.exit_code == 3, result.output
        assert _flat(f"error: disk full: cannot write {out / 'results.duckdb'} (") in said
        assert "MiBfreeonthatfilesystem" in said and "Traceback" not in result.output
        with ResultsStore(out, None, mode="r") as store:  # the committed batch, whole
            (key,) = store.done_keys()
            hash_ = str(store.meta["config_hash"])
            assert store.con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
        assert key == run_record(0, hash_).run_key
        with ResultsStore(out, hash_) as store:  # resumable: the next batch is written
            store.append([run_record(1, hash_)])
            assert len(store.done_keys()) == 2
    finally:
        subprocess.run(["umount", str(out.parent)], check=False)
