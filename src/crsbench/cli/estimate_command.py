"""``crsbench estimate CONFIG``: how long the grid will take, per cell and in total."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from crsbench.cli.app import app, console, err_console, fail
from crsbench.cli.output import EXIT_CODES_HELP, print_json, print_table
from crsbench.core.errors import ConfigError, CrsbenchError

_COLUMNS = {"encoder": "encoder", "dataset": "dataset", "images": "images",
            "img_per_s": "img/s", "extract_h": "extract h", "probe_h": "probe h",
            "lora_h": "LoRA h", "total_h": "total h"}  # fmt: skip


def parse_throughputs(values: list[str], encoders: list[str]) -> dict[str, float]:
    """``ENCODER=IMG_PER_S`` options → {encoder: img/s}; errors name the encoder and value."""
    from crsbench.config.rules import did_you_mean

    out: dict[str, float] = {}
    for raw in values:
        name, sep, number = raw.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"--throughput must be ENCODER=IMG_PER_S. Got {raw!r} instead.")
        if name not in encoders:
            raise ConfigError(f"--throughput: encoder {name!r} is not in the config "
                              f"({', '.join(encoders)}).{did_you_mean(name, encoders)}")  # fmt: skip
        try:
            value = float(number)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"--throughput {name}: img/s must be a positive number. "
                              f"Got {number!r} instead.")  # fmt: skip
        out[name] = value
    return out


def _tell(name: str) -> None:
    """A line on stderr before each encoder is built and timed (it can take minutes)."""
    err_console.print(f"measuring {name} (true size, random weights) ...", highlight=False)


def _speeds(cfg, given: dict[str, float], documented: bool, images: int):
    """Every encoder's speed: given, else documented (``--documented``), else measured."""
    from crsbench.core.extras import require_extra
    from crsbench.runs.estimate import (
        EncoderSpeed,
        documented_speeds,
        input_sizes,
        measured_speeds,
    )

    sizes = input_sizes(cfg)
    rest = [n for n in sizes if n not in given]
    other = []
    if rest and not documented:
        require_extra("encoders", "crsbench estimate (measuring img/s here)")
    if rest:
        other = (
            documented_speeds(cfg, rest)
            if documented
            else measured_speeds(cfg, rest, images, _tell)
        )
    by_name = {s.encoder: s for s in other}
    by_name.update({n: EncoderSpeed(n, sizes[n], v, "given") for n, v in given.items()})
    return [by_name[n] for n in sizes], bool(rest) and not documented


def _node_lines(title: str, node) -> list[str]:
    return [f"{title}: {node.wall_h:.1f} h wall-clock on one {node.gpus}-GPU node "
            f"({node.device}): {node.gpu_hours:.1f} GPU hours / {node.gpus} + "
            f"{node.probe_hours:.1f} probe-worker hours / {node.probe_workers} host workers "
            f"(figures: {node.figures})"]  # fmt: skip


def _text(proj, node, paper_node, check, assumptions: list[str]) -> None:
    """The table (terminal: rich; else tab-separated) and the plain lines after it."""
    rows = [c.row() for c in proj.cells]
    print_table(console, rows, _COLUMNS, title="crsbench estimate: hours per cell",
                right=tuple(list(_COLUMNS)[2:]))  # fmt: skip
    typer.echo(f"total: extraction {proj.total('extract_h'):.2f} h, probes "
               f"{proj.total('probe_h'):.2f} h, LoRA {proj.total('lora_h'):.2f} h, all "
               f"{proj.total('total_h'):.2f} h")  # fmt: skip
    for s in proj.speeds:
        typer.echo(f"speed {s.encoder}: {s.img_per_s:.1f} img/s at {s.input_size} px ({s.source})")
    typer.echo(f"probe cost: {proj.probe_rates.source}")
    if check is not None:
        typer.echo(f"probe scaling check: {check.line()}")
    for d in proj.datasets:
        typer.echo(f"dataset {d.name}: {d.n_images} images (train {d.n_train}, val {d.n_val}, "
                   f"test {d.n_test}, evaluated {d.n_eval}) from {d.source}")  # fmt: skip
    for line in _node_lines("this config at the speeds above", node) + _node_lines(
        "paper grid at the documented figures", paper_node
    ):
        typer.echo(line)
    for a in assumptions:
        typer.echo(f"assumes: {a}")


def _json(proj, node, paper_node, check, assumptions: list[str]) -> None:
    from dataclasses import asdict

    def node_dict(n):
        return {**asdict(n), "wall_h": n.wall_h}

    print_json({
        "cells": [c.row() for c in proj.cells],
        "totals": {k: proj.total(k) for k in ("extract_h", "probe_h", "lora_h", "total_h")},
        "speeds": [asdict(s) for s in proj.speeds],
        "probe_rates": asdict(proj.probe_rates),
        "probe_scaling_check": None if check is None else
        {"rows": list(check.rows), "seconds": list(check.seconds), "ratio": check.ratio},
        "datasets": [asdict(d) for d in proj.datasets],
        "node": node_dict(node),
        "paper_node": node_dict(paper_node),
        "assumptions": assumptions,
    })  # fmt: skip


@app.command("estimate", epilog=EXIT_CODES_HELP)
def estimate(
    config: Path = typer.Argument(..., help="Benchmark config (YAML)."),
    throughput: list[str] = typer.Option(
        [],
        "--throughput",
        help="ENCODER=IMG_PER_S: forward img/s of an encoder on your "
        "device (repeatable); the others are measured here (or --documented).",
    ),
    documented: bool = typer.Option(
        False,
        "--documented",
        help="Use the documented H200 figures for the encoders without "
        "--throughput instead of measuring them here.",
    ),
    measure_probes: bool = typer.Option(
        False,
        "--measure-probes",
        help="Time the probes here even when no encoder is measured "
        "(default: documented probe costs then).",
    ),
    images: int = typer.Option(8, "--images", min=1, help="Images timed per measured encoder."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Project extraction, probe and LoRA hours per cell and in total, and the paper grid on
    one 8-GPU node (docs/runner.md, "How long will my grid take?")."""
    from crsbench.config import load_config, validate_names
    from crsbench.runs.estimate import ASSUMPTIONS, node_projection, paper_node_projection, project
    from crsbench.runs.estimate_data import load_throughput_table
    from crsbench.runs.estimate_probe import measure_probe_rates

    try:
        cfg = load_config(config)
        validate_names(cfg)
        given = parse_throughputs(throughput, [e.name for e in cfg.encoders])
        speeds, measured = _speeds(cfg, given, documented, images)
        table, check = load_throughput_table(), None
        rates = table.probe_rates
        if measured or measure_probes:
            rates, check = measure_probe_rates(cfg)
        proj = project(cfg, speeds, rates)
        _, paper_node = paper_node_projection()
    except CrsbenchError as exc:
        fail(exc)
        return
    assumptions = [a.format(ratio=table.training_cost_ratio) for a in ASSUMPTIONS]
    out = _json if as_json else _text
    out(proj, node_projection(proj), paper_node, check, assumptions)
