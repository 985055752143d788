"""Run the cells of a benchmark on a Ray cluster; the driver stays the single writer.

Each cell (encoder × dataset) becomes two Ray tasks:

1. an **extraction task** (asks for one GPU when the cluster has GPUs and the config allows
   them) that extracts every feature set of the cell through the content-addressed
   :class:`~crsbench.features.FeatureCache` and returns only the *cache keys* of the entries
   (a few hundred bytes, never the arrays);
2. a **probe task** that depends on the first, reads the verified entries back from the
   cache (``cache_dir`` must be on a filesystem shared by the driver and every node), builds
   the cell's arrays and runs :func:`~crsbench.runs.cell.evaluate_cell`.

The driver submits every task at once, yields each :class:`~crsbench.runs.plan.CellOutcome`
as its probe task completes (``ray.wait``) and commits it to the store itself; workers never
touch the store. A worker that dies (killed, out of memory, node lost) has its task retried up
to ``max_retries`` times; since cache entries are committed atomically and the store is only
written by the driver from a completed outcome, a retry loses or doubles nothing.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from crsbench.config import BenchmarkConfig
from crsbench.core.errors import CacheError, ConfigError, CrsbenchError
from crsbench.runs.cell import CellData, CellSettings, evaluate_cell
from crsbench.runs.plan import CellOutcome, CellPlan
from crsbench.runs.prepare import PreparedDataset, shift_targets_for

#: ``extract_fn(cfg, plan, prep, target, progress=...) -> (features, encoder_revision)``
ExtractFn = Callable[..., tuple[dict[str, Any], str]]
#: ``evaluate_fn(cell_data, settings) -> run rows``
EvaluateFn = Callable[[CellData, CellSettings], list[dict[str, Any]]]

INSTALL_HINT = 'pip install "crsbench[ray]"'
DEFAULT_OBJECT_STORE_BYTES = 200 * 1024**2


def import_ray() -> Any:
    """Import :mod:`ray`, or raise a :class:`ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            f"executor 'ray' needs the optional ray extra: {INSTALL_HINT}. "
            f"Got ImportError: {exc} instead."
        ) from exc
    return ray


def check_reachable(address: str | None, timeout_s: float = 10.0) -> None:
    """Fail fast when a ``host:port`` (or ``ray://host:port``) address does not answer.

    ``ray.init`` keeps retrying an unreachable address for minutes; a plain TCP connection
    tells in seconds. ``None``, ``"auto"`` and ``"local"`` are left to Ray.

    Raises
    ------
    ConfigError
        If nothing accepts a TCP connection at the address within ``timeout_s``.
    """
    import socket

    if not address or address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise ConfigError(
            f"--address must name a running Ray cluster. Got {address!r} instead, where nothing "
            f"answers ({type(exc).__name__}: {exc}); start one with `ray start --head` or "
            "leave --address out for a local instance."
        ) from exc


@dataclass(frozen=True)
class ExtractedCell:
    """What an extraction task sends back: cache keys only, plus provenance and timing.

    Attributes
    ----------
    features : dict
        The structure returned by :func:`~crsbench.runs.extract_cell.extract_cell_features`
        with every :class:`~crsbench.features.results.FeatureArray` emptied (its ``key`` is
        kept; the rows are read back from the cache by the probe task).
    encoder_revision : str
        Provenance string of the encoder.
    seconds : float
        Wall time of the extraction in the worker.
    """

    features: dict[str, Any]
    encoder_revision: str
    seconds: float


def _map_arrays(tree: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every FeatureArray of a nested dict (the cell's feature structure)."""
    from crsbench.features.results import FeatureArray

    if isinstance(tree, FeatureArray):
        return fn(tree)
    if isinstance(tree, dict):
        return {k: _map_arrays(v, fn) for k, v in tree.items()}
    return tree


def strip_features(features: dict[str, Any]) -> dict[str, Any]:
    """The feature structure with every array and id list replaced by an empty one."""
    import numpy as np

    def strip(fa: Any) -> Any:
        merged = "+" in fa.key  # rows of several entries: their order is kept in ``ids``
        ids = fa.ids if merged else np.empty(0, dtype=str)
        return dataclasses.replace(fa, features=np.empty((0, 0), dtype=np.float32), ids=ids)

    return _map_arrays(features, strip)


def load_features(features: dict[str, Any], cache_dir: Any) -> dict[str, Any]:
    """Read every (stripped) FeatureArray of ``features`` back from the cache, verified.

    A merged array (key ``k1+k2``: rows of several entries, see
    :func:`crsbench.runs.extract_cell.extract_cell_features`) is read part by part and put
    back in the row order its kept ``ids`` record.

    Raises
    ------
    CacheError
        If an entry is missing or corrupt here: ``cache_dir`` is not shared by the node
        that extracted it, or it was removed in between.
    """
    import numpy as np

    from crsbench.features import FeatureCache

    cache = FeatureCache(cache_dir)

    def read(fa: Any, key: str) -> Any:
        r = cache.get(key)
        if r.status != "hit":
            raise CacheError(
                f"feature cache entry {key} ({fa.condition.name}@{fa.condition.severity}, "
                f"depth {fa.depth}) must be readable by the probe task in {cache.root}. Got "
                f"{r.status!r} instead ({r.problem or 'no committed entry'}): cache_dir must "
                "be on a filesystem shared by the driver and every Ray node."
            )
        return r

    def load(fa: Any) -> Any:
        reads = [read(fa, k) for k in fa.key.split("+")]
        if len(reads) == 1:
            return dataclasses.replace(fa, features=reads[0].array, ids=reads[0].ids, status="hit")
        ids = np.concatenate([np.asarray(r.ids) for r in reads])
        pos = {i: k for k, i in enumerate(ids.tolist())}
        order = np.array([pos[i] for i in np.asarray(fa.ids).tolist()], dtype=np.int64)
        feats = np.concatenate([np.asarray(r.array) for r in reads])[order]
        return dataclasses.replace(fa, features=feats, ids=ids[order], status="hit")

    return _map_arrays(features, load)


def extract_task(
    cfg: BenchmarkConfig,
    plan: CellPlan,
    prepared: dict[str, PreparedDataset],
    extract_fn: ExtractFn | None = None,
) -> ExtractedCell:
    """Body of an extraction task: fill the shared cache with the cell's features."""
    from crsbench.runs.extract_cell import extract_cell_features

    fn = extract_fn or extract_cell_features
    t0 = time.perf_counter()
    prep = prepared[plan.dataset]
    targets = shift_targets_for(plan, prepared)
    feats, enc_rev = fn(cfg, plan, prep, targets, progress=False)
    return ExtractedCell(strip_features(feats), enc_rev, time.perf_counter() - t0)


def probe_task(
    cfg: BenchmarkConfig,
    plan: CellPlan,
    prepared: dict[str, PreparedDataset],
    settings: CellSettings,
    extracted: ExtractedCell,
    evaluate_fn: EvaluateFn | None = None,
) -> CellOutcome:
    """Body of a probe task: read the cell's features from the cache and evaluate it."""
    from crsbench.runs.cell_inputs import cell_data

    t0 = time.perf_counter()
    feats = load_features(extracted.features, cfg.resolved_cache_dir)
    prep = prepared[plan.dataset]
    targets = shift_targets_for(plan, prepared)
    data = cell_data(plan, prep, feats, targets)
    t1 = time.perf_counter()
    rows = (evaluate_fn or evaluate_cell)(data, settings)
    t_read, t_eval = t1 - t0, time.perf_counter() - t1
    precision = extracted.features.get("precision", {})
    return CellOutcome(plan, rows, extracted.encoder_revision, extracted.seconds + t_read, t_eval,
                       precision, data.quarantined)  # fmt: skip


class RayExecutor:
    """Extraction and probe tasks on a Ray cluster; outcomes are yielded as they complete.

    Parameters
    ----------
    address : str, optional
        Address of an existing cluster (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``).
        ``None`` starts a local instance (or joins ``RAY_ADDRESS`` when set), which
        :meth:`close` shuts down again. The session starts with the first cell, so a run
        with nothing left to do starts nothing. If Ray is already initialised in this
        process, that session is used and left running.
    max_retries : int
        Times a task is retried when its worker dies (application errors are not retried:
        they would fail again).
    num_cpus_per_task : float
        CPUs reserved per task (extraction with ``num_workers > 0`` decoders may want more).
    num_cpus : int, optional
        CPUs of a local instance (default: all of this machine's).
    object_store_bytes : int
        Object store size of a local instance (only small objects travel through it).
    connect_timeout_s : float
        How long a ``host:port`` address may take to accept a TCP connection.
    stall_timeout_s : float, optional
        End the run (force-cancelling every pending task) when no cell completes for this
        long: a hung worker then stops the job instead of blocking it forever. Cells already
        yielded stay committed; a rerun resumes. ``None`` (default) waits indefinitely.
    extract_fn, evaluate_fn : callable, optional
        Replace :func:`~crsbench.runs.extract_cell.extract_cell_features` and
        :func:`~crsbench.runs.cell.evaluate_cell` in the tasks (custom probes, fault
        injection in tests). They are pickled with cloudpickle and must be deterministic.

    Raises
    ------
    ConfigError
        If the ``ray`` extra is not installed or a parameter is out of range.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        max_retries: int = 3,
        num_cpus_per_task: float = 1,
        num_cpus: int | None = None,
        object_store_bytes: int = DEFAULT_OBJECT_STORE_BYTES,
        connect_timeout_s: float = 10.0,
        stall_timeout_s: float | None = None,
        extract_fn: ExtractFn | None = None,
        evaluate_fn: EvaluateFn | None = None,
    ) -> None:
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0. Got {max_retries} instead.")
        if num_cpus_per_task <= 0:
            raise ConfigError(f"num_cpus_per_task must be > 0. Got {num_cpus_per_task} instead.")
        self._ray = import_ray()
        self.max_retries = int(max_retries)
        self.num_cpus_per_task = num_cpus_per_task
        self._extract_fn = extract_fn
        self._evaluate_fn = evaluate_fn
        self.address = address
        self.num_cpus = num_cpus
        self.object_store_bytes = int(object_store_bytes)
        self.connect_timeout_s = float(connect_timeout_s)
        if stall_timeout_s is not None and stall_timeout_s <= 0:
            raise ConfigError(
                f"stall_timeout_s must be > 0 or None. Got {stall_timeout_s} instead."
            )
        self.stall_timeout_s = stall_timeout_s
        #: True once this executor has started (or connected) the Ray session it uses
        self.owns_instance = False
        self._closed = False

    def start(self) -> None:
        """Start a local instance or connect to ``address`` unless Ray is already initialised.

        Called by :meth:`run_cells` when there is work, so a finished grid starts nothing.
        """
        if self._closed:
            raise CrsbenchError("this RayExecutor is closed; make a new one.")
        if self._ray.is_initialized():
            return
        self._init(self.address, self.num_cpus, self.object_store_bytes)
        self.owns_instance = True

    # ---------------------------------------------------------------------------- helpers
    def _init(self, address: str | None, num_cpus: int | None, store_bytes: int) -> None:
        """Start a local instance (``address`` None, no ``RAY_ADDRESS``) or connect."""
        kwargs: dict[str, Any] = {
            "ignore_reinit_error": True,
            "include_dashboard": False,
            "log_to_driver": False,
        }
        local = address is None and not os.environ.get("RAY_ADDRESS")
        if local:
            kwargs.update(num_cpus=num_cpus, object_store_memory=int(store_bytes))
        else:
            check_reachable(address or os.environ.get("RAY_ADDRESS"), self.connect_timeout_s)
        try:
            self._ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            what = (
                "a local Ray instance must start"
                if local
                else f"--address must name a running Ray cluster (address={address!r}, "
                f"RAY_ADDRESS={os.environ.get('RAY_ADDRESS')!r})"
            )
            raise ConfigError(f"{what}. Got {type(exc).__name__}: {exc} instead.") from exc

    def cluster_gpus(self) -> float:
        """GPUs the cluster reports (0 when none)."""
        self.start()
        return float(self._ray.cluster_resources().get("GPU", 0.0))

    def extraction_gpus(self, cfg: BenchmarkConfig) -> float:
        """GPUs an extraction task asks for: 1 when the cluster has one and ``device`` allows."""
        gpus = self.cluster_gpus()
        if cfg.device == "cuda" and gpus < 1:
            raise ConfigError(
                "device must be 'auto' or 'cpu' on a Ray cluster without GPUs. "
                "Got 'cuda' instead (ray.cluster_resources() reports no GPU)."
            )
        return 1.0 if gpus >= 1 and cfg.device != "cpu" else 0.0

    def _raise_failed(self, plan: CellPlan, exc: BaseException) -> None:
        ray = self._ray
        cell = f"cell {plan.encoder} × {plan.dataset}"
        if isinstance(exc, ray.exceptions.RayTaskError):
            cause = getattr(exc, "cause", None)
            if isinstance(cause, CrsbenchError):
                try:
                    named = type(cause)(f"{cell}: {cause}")
                except TypeError:  # a subclass with another constructor: keep it as is
                    named = cause
                raise named from exc
            raise CrsbenchError(f"{cell}: a Ray task failed:\n{exc}") from exc
        raise CrsbenchError(
            f"{cell}: the Ray worker running it died {self.max_retries + 1} times "
            f"(max_retries={self.max_retries}); nothing of this cell was written. "
            f"Got {type(exc).__name__}: {exc}"
        ) from exc

    def _stalled(self, plans: list[CellPlan], refs: list[Any]) -> None:
        for ref in refs:
            try:
                self._ray.cancel(ref, force=True)
            except Exception:  # already finished
                pass
        cells = ", ".join(f"{p.encoder} × {p.dataset}" for p in plans)
        raise CrsbenchError(
            f"no cell finished within stall_timeout_s={self.stall_timeout_s:g} s (a hung "
            f"worker?); cancelled {len(plans)} pending cell(s): {cells}. Cells already "
            "written are kept: run again to resume."
        )

    # -------------------------------------------------------------------------------- API
    def run_cells(
        self,
        cfg: BenchmarkConfig,
        cells: Sequence[CellPlan],
        prepared: dict[str, PreparedDataset],
        settings: CellSettings,
        *,
        progress: bool = True,
    ) -> Iterator[CellOutcome]:
        """Submit every cell's two tasks, then yield outcomes in completion order.

        ``progress`` is accepted for the executor protocol; workers never draw progress
        bars (the driver reports each completed cell).
        """
        if not cells:
            return
        gpus = self.extraction_gpus(cfg)  # starts the session
        ray = self._ray
        common = {"max_retries": self.max_retries, "retry_exceptions": False}
        ext, probe = ray.remote(extract_task), ray.remote(probe_task)
        ext_opts = {"num_cpus": self.num_cpus_per_task, "num_gpus": gpus, **common}
        probe_opts = {"num_cpus": self.num_cpus_per_task, "num_gpus": 0, **common}
        cfg_ref, prep_ref, set_ref = ray.put(cfg), ray.put(prepared), ray.put(settings)
        pending: dict[Any, CellPlan] = {}
        extract_refs = []
        for plan in cells:
            name = f"{plan.encoder}×{plan.dataset}"
            e = ext.options(name=f"extract {name}", **ext_opts).remote(
                cfg_ref, plan, prep_ref, self._extract_fn
            )
            p = probe.options(name=f"probe {name}", **probe_opts).remote(
                cfg_ref, plan, prep_ref, set_ref, e, self._evaluate_fn
            )
            extract_refs.append(e)
            pending[p] = plan
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=self.stall_timeout_s)
                if not ready:
                    self._stalled(list(pending.values()), [*pending, *extract_refs])
                for ref in ready:
                    plan = pending.pop(ref)
                    try:
                        outcome = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        self._raise_failed(plan, exc)
                    yield outcome
        finally:
            for ref in [*pending, *extract_refs]:
                try:
                    ray.cancel(ref)
                except Exception:
                    pass

    def close(self) -> None:
        """Shut down the local instance this executor started; leave other sessions running."""
        if self._closed:
            return
        self._closed = True
        if self.owns_instance and self._ray.is_initialized():
            self._ray.shutdown()
