"""Before any work: is every dataset root readable and every encoder's weights on this machine?

:func:`preflight` checks the whole config at once (no download, no hub retries) and returns a
:class:`Preflight` that lists everything missing with where to put it. ``crsbench run`` refuses
to start when something is missing (exit 2) unless ``--skip-missing`` is given; then
:func:`runnable_config` gives the part of the grid that can run and :meth:`Preflight.skipped_cells`
the cells left out, which the run records in ``last_run.json`` (never imputed).
"""

from __future__ import annotations

import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crsbench.config import BenchmarkConfig
from crsbench.core.errors import CrsbenchError

#: Seconds the one reachability check of the Hugging Face hub may take.
HUB_CHECK_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class Lack:
    """One thing the config needs that this machine does not have."""

    kind: str  # "extra", "device", "dataset", "encoder" or "anchors"
    name: str
    problem: str
    places: tuple[str, ...] = ()


@dataclass
class Preflight:
    """Everything missing for one config, found in one pass."""

    lacks: list[Lack] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    n_encoders: int = 0
    n_datasets: int = 0

    @property
    def ok(self) -> bool:
        """True when nothing is missing."""
        return not self.lacks

    def missing(self, kind: str) -> set[str]:
        """Names of the missing things of one kind."""
        return {lack.name for lack in self.lacks if lack.kind == kind}

    def lines(self) -> list[str]:
        """Plain text: a summary line, then each missing item with where to put it."""
        head = f"preflight: {self.n_datasets} datasets, {self.n_encoders} encoders: " + (
            "everything found" if self.ok else f"{len(self.lacks)} missing"
        )
        out = [head]
        for lack in self.lacks:
            out.append(f"  missing {lack.kind} {lack.name}: {lack.problem}")
            out += [f"      put it in: {p}" if i == 0 else f"        or: {p}"
                    for i, p in enumerate(lack.places)]  # fmt: skip
        out += [f"  note: {n}" for n in self.notes]
        return out

    def skipped_cells(self, cfg: BenchmarkConfig) -> list[dict[str, str]]:
        """The (encoder, dataset) cells of ``cfg`` that cannot run, each with its reason."""
        enc_gone, ds_gone = self.missing("encoder"), self.missing("dataset")
        shift_of = {s.source: s.target for s in cfg.shifts}
        out = []
        for enc, ds in cfg.frozen_cells:  # cells of exclude_cells are not skipped: never planned
            reasons = []
            if enc in enc_gone:
                reasons.append(f"weights of encoder {enc!r} not found")
            if ds in ds_gone:
                reasons.append(f"dataset {ds!r} not readable")
            target = shift_of.get(ds)
            if target in ds_gone:
                reasons.append(f"shift target dataset {target!r} not readable")
            if reasons:
                out.append({"encoder": enc, "dataset": ds, "reason": "; ".join(reasons)})
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form (``crsbench doctor --json``)."""
        return {
            "ok": self.ok,
            "n_encoders": self.n_encoders,
            "n_datasets": self.n_datasets,
            "missing": [asdict(lack) | {"places": list(lack.places)} for lack in self.lacks],
            "notes": list(self.notes),
        }


def _dataset_lacks(cfg: BenchmarkConfig) -> list[Lack]:
    from crsbench.runs.prepare import load_checked

    lacks = []
    for name, spec in cfg.datasets.items():
        where = (f"datasets.{name}.root in the config (now {spec.root}), or set CRSBENCH_DATA "
                 "when the config uses it; layouts: docs/datasets.md",)  # fmt: skip
        if not Path(spec.root).is_dir():
            lacks.append(Lack("dataset", name, f"root {spec.root} is not a directory", where))
            continue
        try:
            load_checked(cfg, name)
        except CrsbenchError as exc:
            lacks.append(Lack("dataset", name, str(exc), where))
    return lacks


def hub_reachable(timeout: float = HUB_CHECK_TIMEOUT_S) -> bool:
    """One HEAD request to the Hugging Face endpoint; False on any error or timeout."""
    try:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT
    except ImportError:  # pragma: no cover - huggingface_hub ships with timm
        endpoint = "https://huggingface.co"
    try:
        urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout)
    except Exception:
        return False
    return True


def _encoder_lacks(cfg: BenchmarkConfig, notes: list[str], hub_check: bool) -> list[Lack]:
    from crsbench.encoders import ENCODERS, weights_available
    from crsbench.encoders.weights import hub_offline

    lacks: list[Lack] = []
    fetchable: list[str] = []
    for i, enc in enumerate(cfg.encoders):
        if enc.weights == "random":  # a dry run's seeded random weights: nothing to find
            continue
        if enc.weights_path is not None:
            if not Path(enc.weights_path).is_file():
                lacks.append(Lack("encoder", enc.name,
                                  f"weights file {enc.weights_path} does not exist",
                                  (f"encoders.{i}.weights_path in the config",)))  # fmt: skip
            continue
        if weights_available(enc.name):
            continue
        source = ENCODERS.get(enc.name).available_fn
        places = tuple(source.places()) if hasattr(source, "places") else ()
        card = ENCODERS.get(enc.name).card
        access = f" ({card.access_note})" if card.gated else ""
        problem = "weights not on this machine" + access
        lacks.append(Lack("encoder", enc.name, problem, places))
        if getattr(source, "downloadable", False):
            fetchable.append(enc.name)
    if fetchable and hub_check and not hub_offline():
        if hub_reachable():
            notes.append(f"the Hugging Face hub is reachable: {', '.join(fetchable)} will be "
                         "downloaded by the run (gated ones need an accepted licence and a token)")  # fmt: skip
            lacks = [lack for lack in lacks if lack.name not in fetchable]
        else:
            notes.append("the Hugging Face hub is not reachable from this machine "
                         f"(one {HUB_CHECK_TIMEOUT_S:g} s check): nothing will be downloaded")  # fmt: skip
    elif fetchable and hub_offline():
        notes.append("HF_HUB_OFFLINE is set: nothing will be downloaded")
    return lacks


def preflight(cfg: BenchmarkConfig, *, hub_check: bool = True) -> Preflight:
    """Check every dataset root and every encoder's weights of ``cfg``; list all that is missing.

    Parameters
    ----------
    cfg : BenchmarkConfig
    hub_check : bool
        When weights are missing locally and ``HF_HUB_OFFLINE`` is not set, make one short
        request to the hub: reachable means the run downloads those files (not missing).

    Returns
    -------
    Preflight
    """
    from crsbench.config.loading import _anchors_is_path
    from crsbench.core.extras import EXTRAS, missing_modules
    from crsbench.encoders.devices import device_problem

    notes: list[str] = []
    lacks = _dataset_lacks(cfg) + _encoder_lacks(cfg, notes, hub_check)
    absent = missing_modules("encoders")
    problem = device_problem(cfg.device) if not absent else None
    if absent:  # nothing is extracted without torch (--skip-missing cannot skip it)
        hint = EXTRAS["encoders"].install_hint
        lacks.insert(0, Lack("extra", "encoders", f"{', '.join(absent)} not installed", (hint,)))
    if problem is not None:  # first: nothing runs without it (--skip-missing cannot skip it)
        lacks.insert(0, Lack("device", cfg.device, problem, ("device: in the config",)))
    if _anchors_is_path(cfg.anchors) and not Path(cfg.anchors).is_file():
        lacks.append(Lack("anchors", str(cfg.anchors), "anchors file does not exist",
                          ("anchors: in the config (a version such as v1, or a YAML path)",)))  # fmt: skip
    return Preflight(lacks, notes, len(cfg.encoders), len(cfg.datasets))


def runnable_config(cfg: BenchmarkConfig, pre: Preflight) -> BenchmarkConfig:
    """``cfg`` without what is missing: the encoders, datasets and shifts that can run.

    The result is used only to plan and execute; records keep the full config's hash, so a later
    run with everything present resumes the same store.
    """
    enc_gone, ds_gone = pre.missing("encoder"), pre.missing("dataset")
    shifts = [s for s in cfg.shifts if s.source not in ds_gone and s.target not in ds_gone]
    lost_sources = {s.source for s in cfg.shifts} - {s.source for s in shifts}
    targets = set(cfg.shift_targets)
    kept_targets = {s.target for s in shifts}
    datasets = {
        n: d
        for n, d in cfg.datasets.items()
        if n not in ds_gone and n not in lost_sources and (n not in targets or n in kept_targets)
    }
    encoders = [e for e in cfg.encoders if e.name not in enc_gone]
    lora = cfg.regimes.lora
    if lora.encoders is not None:
        lora = lora.model_copy(update={"encoders": [n for n in lora.encoders if n not in enc_gone]})
    regimes = cfg.regimes.model_copy(update={"lora": lora})
    return cfg.model_copy(
        update={"encoders": encoders, "datasets": datasets, "shifts": shifts, "regimes": regimes}
    )
