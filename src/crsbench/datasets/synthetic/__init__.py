"""Synthetic datasets written in the exact on-disk layouts of the real ones.

``write_all(out)`` writes ``out/isic2019``, ``out/aptos2019``, ``out/chexpert``,
``out/mimic_cxr`` and the shift targets ``out/nih_cxr14``, ``out/padchest`` and
``out/vindr_cxr`` (DICOM, needs pydicom: skipped with a warning without it); each folder has the real file names, CSV columns, value formats and folder
structure, and image content that carries the labels at a realistic difficulty. Output is
byte-identical for a seed and written atomically (see ``docs/synthetic.md``).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from crsbench.core.errors import ConfigError
from crsbench.datasets.synthetic.aptos2019 import write_aptos2019
from crsbench.datasets.synthetic.chexpert import write_chexpert
from crsbench.datasets.synthetic.isic2019 import write_isic2019
from crsbench.datasets.synthetic.mimic_cxr import write_mimic_cxr
from crsbench.datasets.synthetic.nih_cxr14 import write_nih_cxr14
from crsbench.datasets.synthetic.padchest import write_padchest
from crsbench.datasets.synthetic.sampling import Progress
from crsbench.datasets.synthetic.sizes import SIZES, SynthSize, resolve_size
from crsbench.datasets.synthetic.vindr_cxr import write_vindr_cxr
from crsbench.store.outputs import refuse_clearing

WRITERS: dict[str, Callable[..., Path]] = {
    "isic2019": write_isic2019,
    "aptos2019": write_aptos2019,
    "chexpert": write_chexpert,
    "mimic_cxr": write_mimic_cxr,
    "nih_cxr14": write_nih_cxr14,
    "padchest": write_padchest,
    "vindr_cxr": write_vindr_cxr,
}
#: Writers that need an optional dependency: name -> the module that must import.
OPTIONAL: dict[str, str] = {"vindr_cxr": "pydicom"}


def available_writers() -> dict[str, Callable[..., Path]]:
    """:data:`WRITERS` minus those whose optional dependency is missing (with a warning)."""
    import importlib.util

    out = {}
    for name, writer in WRITERS.items():
        module = OPTIONAL.get(name)
        if module is not None and importlib.util.find_spec(module) is None:
            warnings.warn(
                f"synthetic {name} skipped: it needs {module} (pip install 'crsbench[dicom]')",
                stacklevel=2,
            )
            continue
        out[name] = writer
    return out


def n_images(name: str, size: str | dict | SynthSize = "small") -> int:
    """How many images the writer of dataset ``name`` produces for ``size``."""
    sz = resolve_size(size)
    counts = {
        "isic2019": sz.isic2019,
        "aptos2019": sz.aptos2019,
        "chexpert": sz.chexpert_train + sz.chexpert_valid,
        "mimic_cxr": sz.mimic_cxr,
        "nih_cxr14": sz.nih_cxr14,
        "padchest": sz.padchest,
        "vindr_cxr": sz.vindr_cxr,
    }
    return counts[name]


def write_all(
    out: str | Path,
    size: str | dict | SynthSize = "small",
    seed: int = 0,
    overwrite: bool = False,
    progress: Callable[[str, int], None] | None = None,
    names: Iterable[str] | None = None,
    processes: int = 1,
) -> dict[str, Path]:
    """Write the synthetic datasets under ``out`` (one folder per :data:`WRITERS` entry).

    Parameters
    ----------
    out : str or Path
        Parent folder; receives ``isic2019``, ``aptos2019``, ``chexpert``, ``mimic_cxr``,
        ``nih_cxr14``, ``padchest`` and ``vindr_cxr`` (official layout).
    size : str, dict or SynthSize
        ``"small"`` (demo), ``"medium"`` (benchmarks) or overrides such as
        ``{"isic2019": 40, "side": 64}`` (see :func:`resolve_size`).
    seed : int
        Generation seed; the same seed gives byte-identical files.
    overwrite : bool
        Replace folders written with other parameters (a complete folder written with the
        same parameters is always left as is). A folder crsbench did not write is never
        replaced: every one is checked before anything is written.
    progress : callable, optional
        ``progress(name, n)`` after every ``n`` images of dataset ``name``.
    names : iterable of str, optional
        Write only these datasets (e.g. the ones a config uses); default: every one whose
        writer is available.
    processes : int
        Write up to this many datasets at once, each in a forked process (Linux; elsewhere,
        and with ``progress``, one after the other). The files are the same either way.

    Returns
    -------
    dict[str, Path]
        Dataset name to its root folder.
    """
    sz = resolve_size(size)
    roots: dict[str, Path] = {}
    if names is None:
        writers = available_writers()
    else:
        wanted = list(names)
        unknown = [n for n in wanted if n not in WRITERS]
        if unknown:
            raise ConfigError(
                f"no synthetic writer for {unknown}. Known: {', '.join(sorted(WRITERS))}."
            )
        writers = {n: WRITERS[n] for n in wanted}
    if Path(out).exists() and not Path(out).is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the dataset roots.")
    for name in writers if overwrite else ():  # before any folder is replaced
        refuse_clearing(Path(out) / name, "--overwrite")
    if processes > 1 and progress is None and len(writers) > 1 and sys.platform == "linux":
        return _write_in_parallel(writers, Path(out), sz, seed, overwrite, processes)
    for name, writer in writers.items():
        callback: Progress = None
        if progress is not None:

            def callback(n: int, _name: str = name) -> None:
                progress(_name, n)

        roots[name] = writer(
            Path(out) / name, size=sz, seed=seed, overwrite=overwrite, progress=callback
        )
    return roots


def _write_one(name: str, out: Path, sz: SynthSize, seed: int, overwrite: bool) -> Path:
    """One dataset's writer, in a worker process."""
    return WRITERS[name](out / name, size=sz, seed=seed, overwrite=overwrite, progress=None)


def _write_in_parallel(
    writers: dict[str, Callable[..., Path]],
    out: Path,
    sz: SynthSize,
    seed: int,
    overwrite: bool,
    processes: int,
) -> dict[str, Path]:
    """Every writer in a pool of forked processes, the largest datasets first. Each writer
    draws from its own seeded generator, so the files are the sequential ones."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    order = sorted(writers, key=lambda n: -n_images(n, sz))
    context = multiprocessing.get_context("fork")  # no re-import of the caller's __main__
    with ProcessPoolExecutor(min(processes, len(order)), mp_context=context) as pool:
        jobs = {n: pool.submit(_write_one, n, out, sz, seed, overwrite) for n in order}
        done = {n: job.result() for n, job in jobs.items()}
    return {n: done[n] for n in writers}


__all__ = [
    "SIZES",
    "WRITERS",
    "available_writers",
    "SynthSize",
    "n_images",
    "resolve_size",
    "write_all",
    "write_aptos2019",
    "write_chexpert",
    "write_isic2019",
    "write_mimic_cxr",
    "write_nih_cxr14",
    "write_padchest",
    "write_vindr_cxr",
]
