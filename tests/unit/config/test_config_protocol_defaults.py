"""Config defaults, probes and the LoRA stage read the protocol's constants, with one name each."""

from __future__ import annotations

import inspect

import numpy as np

from crsbench import protocol
from crsbench.config import KNNConfig, LoraConfig, MLPConfig, parse_config
from crsbench.metrics.label_efficiency import retention
from crsbench.probes import KNNProbe, MLPProbe
from crsbench.splits import label_subsamples


def _defaults(fn: object) -> dict[str, object]:
    params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


def test_protocol_values_are_the_documented_ones() -> None:
    assert protocol.LABEL_FRACTIONS == (0.01, 0.05, 0.10, 0.25, 1.0)
    assert protocol.RETENTION_FRACTIONS == (0.01, 0.05, 0.10, 0.25)
    assert protocol.SEEDS == (0, 1, 2, 3, 4) and protocol.LAYER_DEPTHS == (0.25, 0.5, 0.75, 1.0)
    np.testing.assert_allclose(protocol.C_GRID, np.logspace(-4, 2, 13), rtol=1e-11)
    assert len(protocol.PAPER_CONDITIONS) == 15
    assert protocol.RECALIBRATORS == ("temperature", "vector", "isotonic", "dirichlet")


def test_config_defaults_are_the_protocol_constants() -> None:
    cfg = parse_config(
        {"encoders": ["pixel"], "datasets": {"isic2019": {"root": "d"}}}, base_dir="."
    )
    assert tuple(cfg.seeds) == protocol.SEEDS and cfg.split_seed == protocol.SPLIT_SEED
    assert tuple(cfg.fractions) == protocol.LABEL_FRACTIONS
    assert tuple(cfg.layers) == protocol.LAYER_DEPTHS
    assert tuple(cfg.recalibrators) == protocol.RECALIBRATORS
    assert tuple(cfg.perturbations.names) == protocol.PAPER_PERTURBATIONS
    assert tuple(cfg.perturbations.severities) == protocol.SEVERITIES
    assert cfg.anchors == protocol.ANCHORS_VERSION
    lg = cfg.probes.logistic
    assert (lg.max_iter, lg.tol) == (protocol.LOGISTIC_MAX_ITER, protocol.LOGISTIC_TOL)
    lora = cfg.regimes.lora
    assert tuple(lora.seeds) == protocol.LORA_SEEDS
    assert tuple(lora.lr_factors) == protocol.LORA_LR_FACTORS
    assert (lora.rank, lora.alpha, lora.dropout, lora.epochs, lora.lr) == (
        protocol.LORA_RANK,
        protocol.LORA_ALPHA,
        protocol.LORA_DROPOUT,
        protocol.LORA_EPOCHS,
        protocol.LORA_LR,
    )


def test_control_probes_take_the_config_names_and_defaults() -> None:
    for config, probe in ((MLPConfig(), MLPProbe), (KNNConfig(), KNNProbe)):
        settings = config.model_dump()
        defaults = _defaults(probe.__init__)
        assert set(settings) <= set(defaults), (
            f"{probe.__name__} lacks {set(settings) - set(defaults)}"
        )
        assert {k: defaults[k] for k in settings} == settings
        probe(**settings)  # the pipeline passes a config section as keyword arguments


def test_lora_wrap_defaults_are_the_config_defaults() -> None:
    from crsbench.adapt.lora import wrap_with_lora

    d = _defaults(wrap_with_lora)
    cfg = LoraConfig()
    assert (d["rank"], d["alpha"], d["dropout"]) == (cfg.rank, cfg.alpha, cfg.dropout)


def test_callers_of_the_fractions_agree() -> None:
    """Subsamples default to every label fraction; retention to every one but the full fit."""
    subs = label_subsamples(np.eye(2)[np.arange(400) % 2], "multiclass")
    assert set(subs) == {(f, s) for f in protocol.LABEL_FRACTIONS for s in protocol.SEEDS}
    curve = {f: 0.5 + f / 4 for f in protocol.LABEL_FRACTIONS}
    expected = np.mean([curve[f] / curve[1.0] for f in (0.01, 0.05, 0.10, 0.25)])
    assert retention(curve) == expected
