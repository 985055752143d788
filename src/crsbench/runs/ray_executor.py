"""Run the cells of a benchmark on a Ray cluster; the driver stays the single writer.

Each cell (encoder × dataset) becomes two Ray tasks:

1. an **extraction task** (asks for one GPU when the cluster has GPUs and the config allows
   them) that extracts every feature set of the cell through the content-addressed
   :class:`~crsbench.features.FeatureCache` and returns only the *cache keys* of the entries
   (a few hundred bytes, never the arrays);
2. a **probe task** that depends on the first, reads the verified entries back from the
   cache (``cache_dir`` must be on a filesystem shared by the driver and every node), builds
   the cell's arrays and runs :func:`~crsbench.evaluation.cell.evaluate_cell`.

The driver submits every task at once, yields each :class:`~crsbench.runs.plan.CellOutcome`
as its probe task completes (``ray.wait``) and commits it to the store itself; workers never
touch the store. A worker that dies (killed, out of memory, node lost) has its task retried up
to ``max_retries`` times; since cache entries are committed atomically and the store is only
written by the driver from a completed outcome, a retry loses or doubles nothing.

The task bodies and the cache-key hand-off between them are in :mod:`crsbench.runs.ray_tasks`;
this module connects to the cluster, submits the tasks and collects their outcomes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from crsbench.core.errors import ConfigError, CrsbenchError
from crsbench.evaluation.cell import CellSettings
from crsbench.runs.extraction import RunExtraction
from crsbench.runs.plan import CellOutcome, CellPlan
from crsbench.runs.prepare import PreparedDataset
from crsbench.runs.ray_tasks import EvaluateFn, ExtractFn, extract_task, probe_task

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
        :func:`~crsbench.evaluation.cell.evaluate_cell` in the tasks (custom probes, fault
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
            # "local": a new instance even where `ray start` left a cluster address on this
            # machine (plain ray.init() would join that cluster, or fail if it is gone).
            kwargs.update(num_cpus=num_cpus, object_store_memory=int(store_bytes))
            # Ray runs its workers at nice 15: on a shared machine they would starve beside
            # any normal-priority work (a test suite, another user's job); ours run at 0.
            kwargs["_system_config"] = {"worker_niceness": 0}
            address = "local"
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

    def extraction_gpus(self, ext: RunExtraction) -> float:
        """GPUs an extraction task asks for: 1 when the cluster has one and ``device`` allows."""
        gpus = self.cluster_gpus()
        if ext.device == "cuda" and gpus < 1:
            raise ConfigError(
                "device must be 'auto' or 'cpu' on a Ray cluster without GPUs. "
                "Got 'cuda' instead (ray.cluster_resources() reports no GPU)."
            )
        return 1.0 if gpus >= 1 and ext.device != "cpu" else 0.0

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
        ext: RunExtraction,
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
        gpus = self.extraction_gpus(ext)  # starts the session
        ray = self._ray
        common = {"max_retries": self.max_retries, "retry_exceptions": False}
        extract_remote, probe = ray.remote(extract_task), ray.remote(probe_task)
        ext_opts = {"num_cpus": self.num_cpus_per_task, "num_gpus": gpus, **common}
        probe_opts = {"num_cpus": self.num_cpus_per_task, "num_gpus": 0, **common}
        ext_ref, prep_ref, set_ref = ray.put(ext), ray.put(prepared), ray.put(settings)
        pending: dict[Any, CellPlan] = {}
        extract_refs = []
        for plan in cells:
            name = f"{plan.encoder}×{plan.dataset}"
            e = extract_remote.options(name=f"extract {name}", **ext_opts).remote(
                ext_ref, plan, prep_ref, self._extract_fn
            )
            p = probe.options(name=f"probe {name}", **probe_opts).remote(
                ext_ref, plan, prep_ref, set_ref, e, self._evaluate_fn
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
