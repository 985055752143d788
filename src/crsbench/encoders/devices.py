"""Which compute device a config may name, and whether this machine has it.

Checked by ``crsbench doctor``, the preflight of ``run`` and the cohort commands before any
folder (cache, store) is created: a ``cuda`` run on a machine without a GPU is refused with the
key named, instead of failing in the driver after the folders exist.
"""

from __future__ import annotations

from crsbench.core.errors import ConfigError

#: The device names a config or ``--device`` accepts.
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")


def device_problem(device: str) -> str | None:
    """Why ``device`` cannot be used on this machine, or None when it can.

    ``auto`` (CUDA when visible, else the CPU) and ``cpu`` always can; ``cuda`` needs
    ``torch.cuda.is_available()``.
    """
    if device not in DEVICES:
        return f"unknown device; must be one of {', '.join(DEVICES)}. Got {device!r} instead"
    if device != "cuda":
        return None
    import torch

    if torch.cuda.is_available():
        return None
    return (
        "no CUDA GPU is visible on this machine (torch.cuda.is_available() is False); "
        "use device: auto or cpu, or run on a machine with a GPU"
    )


def require_device(device: str, key: str = "device") -> str:
    """Return ``device`` when this machine can use it.

    Parameters
    ----------
    device : str
    key : str
        The config key or option that named it, for the message (``device``, ``--device``).

    Raises
    ------
    ConfigError
        ``device`` is unknown, or ``cuda`` on a machine without a visible GPU.
    """
    problem = device_problem(device)
    if problem is not None:
        raise ConfigError(f"{key}: {problem}.")
    return device
