"""``crsbench profile``, ``export``, ``predict`` and ``verdict``: your own cohort (docs/cohort.md)."""

from __future__ import annotations

import signal
from pathlib import Path

import typer

from crsbench.cli.app import app, console, fail
from crsbench.cli.output import (
    EXIT_CODES_HELP,
    EXIT_INTERRUPTED,
    INTERVAL_OPTION,
    QUIET_OPTION,
    VERBOSE_OPTION,
    print_json,
    seed_option,
    verbosity,
)
from crsbench.core.errors import CrsbenchError
from crsbench.core.verbosity import NORMAL, QUIET
from crsbench.store.files import STORE_FILE
from crsbench.store.outputs import claim_output_file, claimed_folder, folder_claimed


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM behaves like Ctrl-C: the open transaction rolls back."""
    raise KeyboardInterrupt


def _spec(config: Path | None, data: Path | None, images: Path | None, label_columns: str | None,
          out: Path | None, **given: object):  # fmt: skip
    """The cohort spec from ``--config`` (YAML) and/or the options (options win)."""
    from crsbench.cohort.spec import CohortSpec, names_list, read_spec
    from crsbench.core.errors import ConfigError

    device = given.get("device")
    base = read_spec(config, device=device) if config is not None else None  # type: ignore[arg-type]
    values = {} if base is None else dict(base.__dict__)
    for key, value in {"data": data, "images": images, "out": out, **given}.items():
        if value is not None and value is not False:
            values[key] = value
    if label_columns is not None:
        values["label_columns"] = names_list(label_columns, "--label-columns")
    for key in ("encoders", "classes"):
        if isinstance(values.get(key), str):
            values[key] = names_list(values[key], f"--{key}")
    missing = [k for k in ("data", "images", "label_columns") if not values.get(k)]
    if missing:
        raise ConfigError(
            "profile needs "
            + ", ".join(f"--{k.replace('_', '-')}" for k in missing)
            + " (or a --config YAML with those keys)."
        )
    return CohortSpec(**values)


@app.command("profile", epilog=EXIT_CODES_HELP)
def profile(
    data: Path | None = typer.Option(None, "--data", help="Cohort CSV: one row per image."),
    images: Path | None = typer.Option(None, "--images", help="Image folder (CSV paths are relative to it)."),
    label_columns: str | None = typer.Option(None, "--label-columns", help="One column (multi-class) or several 0/1 columns (multi-label), comma-separated."),
    group_column: str | None = typer.Option(None, "--group-column", help="Patient id column: splits never cut a patient."),
    encoders: str | None = typer.Option(None, "--encoders", help="Encoders, comma-separated (default: the paper's panel)."),
    out: Path | None = typer.Option(None, "--out", help="Output directory (default cohort_profile)."),
    config: Path | None = typer.Option(None, "--config", help="A short cohort YAML (docs/cohort.md); options override it."),
    path_column: str | None = typer.Option(None, "--path-column", help="Image path column (default path)."),
    classes: str | None = typer.Option(None, "--classes", help="Allowed classes of a single label column, comma-separated."),
    labels_per_image: bool = typer.Option(False, "--labels-per-image", help="A patient's images may carry different labels."),
    device: str | None = typer.Option(None, "--device", help="auto, cpu or cuda."),
    force: bool = typer.Option(False, help="Write into a non-empty folder crsbench did not create (never overwrites)."),
    skip_missing: bool = typer.Option(False, "--skip-missing", help="Run the encoders whose weights are present."),
    update_weights_lock: bool = typer.Option(False, "--update-weights-lock", help="Accept weights whose sha256 differs from DIR/weights.lock and record them."),
    jobs: int | None = typer.Option(None, "--jobs", min=1, help="Worker processes fitting the probes (default: every available core). The records do not depend on it."),
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:  # fmt: skip
    """Profile the encoders on your own cohort: the four axes, the CRS, recalibration (resumable).

    The cohort is checked first (labels, patients, class counts per split, images); a refused
    cohort leaves nothing written. Then the benchmark's own pipeline runs on it and
    DIR/verdict.html is written.
    """
    from crsbench.cohort.profile import profile_cohort
    from crsbench.core.extras import require_extra
    from crsbench.encoders.devices import require_device
    from crsbench.runs.progress import RunProgress

    level = verbosity(quiet, verbose)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        require_extra("encoders", "crsbench profile")  # before any folder or device check
        if device is not None:  # the option named; the spec checks the YAML's (cohort/spec.py)
            require_device(device, "--device")
        spec = _spec(config, data, images, label_columns, out, group_column=group_column,
                     encoders=encoders, path_column=path_column, classes=classes,
                     labels_per_image=labels_per_image, device=device)  # fmt: skip
        with RunProgress(console, verbosity=level, bars=level > QUIET) as bar:

            def on_event(event: str, info: dict) -> None:
                if event == "cohort":
                    _say_cohort(bar, info)
                else:
                    bar(event, info)

            result = profile_cohort(spec, on_event=on_event, progress=False, force=force,
                                    skip_missing=skip_missing, jobs=jobs,
                                    update_weights_lock=update_weights_lock)  # fmt: skip
    except CrsbenchError as exc:
        fail(exc)
        return
    except KeyboardInterrupt:
        fail("interrupted: committed cells are kept; run the same command again to resume.",
             code=EXIT_INTERRUPTED)  # fmt: skip
        return
    finally:
        signal.signal(signal.SIGTERM, previous)
    run = result.run
    typer.echo(f"wrote {run.n_records_written} run records ({run.n_records_total} in the "
               f"profile) to {run.out_dir / STORE_FILE}")  # fmt: skip
    typer.echo(f"verdict: {result.verdict}")


def _say_cohort(bar, info: dict) -> None:
    s = info["summary"]
    bar.say(f"cohort: {s.n_images} images of {s.n_patients} patients, {s.task}, "
            f"{len(s.labels)} labels; splits {s.split_sizes}")  # fmt: skip
    for reason in info["reasons"]:
        bar.say(f"  {reason}")
    for warning in s.warnings:
        bar.say(f"warning: {warning}", QUIET)


@app.command("export", epilog=EXIT_CODES_HELP)
def export(
    store: Path = typer.Option(..., "--store", help="The profile's output directory."),
    encoder: str = typer.Option(..., "--encoder", help="Encoder whose probe is exported."),
    recalibrator: str = typer.Option("none", "--recalibrator", help="none, temperature, vector, isotonic or dirichlet."),
    out: Path = typer.Option(..., "--out", help="Model folder to write (must be new or empty)."),
    seed: int | None = seed_option(None, "Run seed of the recalibration folds (default: the first)."),
    as_json: bool = typer.Option(False, "--json", help="Print the model's description as JSON."),
) -> None:  # fmt: skip
    """Export the probe and recalibrator of a profiled encoder as safetensors + JSON.

    The probe and recalibrator are refitted from the cached features and must reproduce the
    stored run's choices and test metrics exactly; otherwise nothing is written.
    """
    from crsbench.cohort.artefact import save_model
    from crsbench.cohort.refit import refit_cell

    try:
        if out.exists() and (not out.is_dir() or any(out.iterdir())) and not folder_claimed(out):
            raise CrsbenchError(
                f"--out {out} must be a new or empty folder (or an earlier export). It is not."
            )
        refit = refit_cell(store, encoder, recalibrator, seed)
        with claimed_folder(out) as folder:  # removed again if this call created it and fails
            path = save_model(refit.model, folder)
    except CrsbenchError as exc:
        fail(exc)
        return
    if as_json:
        import json

        print_json(json.loads(path.read_text(encoding="utf-8")))
        return
    typer.echo(f"wrote {path} (+ {path.with_name('model.safetensors').name}); reproduces the "
               f"stored test metrics {refit.checked}")  # fmt: skip


@app.command("predict", epilog=EXIT_CODES_HELP)
def predict(
    model: Path = typer.Option(..., "--model", help="A folder written by `crsbench export`."),
    images: Path = typer.Option(..., "--images", help="An image folder, or a CSV with a path column."),
    out: Path = typer.Option(..., "--out", help="Predictions CSV to write."),
    weights: Path | None = typer.Option(None, "--weights", help="Encoder weights file or folder."),
    device: str = typer.Option("cpu", "--device", help="cpu or cuda."),
    path_column: str = typer.Option("path", "--path-column", help="Path column of a CSV."),
    quiet: bool = QUIET_OPTION,
    verbose: bool = VERBOSE_OPTION,
) -> None:  # fmt: skip
    """Calibrated probabilities of new images: encoder → probe → recalibrator."""
    from crsbench.cohort.artefact import load_model
    from crsbench.cohort.predict import predict_images, write_predictions
    from crsbench.core.extras import require_extra
    from crsbench.encoders.devices import require_device

    level = verbosity(quiet, verbose)
    try:
        require_extra("encoders", "crsbench predict")
        require_device(device, "--device")
        claim_output_file(out)  # refused before any work: never a store or a foreign file
        artefact = load_model(model)
        pred = predict_images(artefact, images, device=device, weights_path=weights,
                              path_column=path_column)  # fmt: skip
        path = write_predictions(pred, out)
    except CrsbenchError as exc:
        fail(exc)
        return
    for f in pred.failed:
        typer.echo(f"unreadable: {f['path']} ({f['error_class']})", err=True)
    if level >= NORMAL:
        typer.echo(f"wrote {len(pred.image_ids)} predictions to {path}"
                   + (f" ({len(pred.failed)} unreadable, listed with their error)"
                      if pred.failed else ""))  # fmt: skip


@app.command("verdict", epilog=EXIT_CODES_HELP)
def verdict(
    store: Path = typer.Option(..., "--store", help="The profile's output directory."),
    compare: Path | None = typer.Option(None, "--compare", help="A benchmark store to show beside the cohort."),
    out: Path | None = typer.Option(None, "--out", help="HTML file (default STORE/verdict.html)."),
    interval: str = INTERVAL_OPTION,
) -> None:  # fmt: skip
    """The one-page verdict of a cohort profile (self-contained HTML)."""
    from crsbench.cohort.verdict_page import verdict_data
    from crsbench.report.verdict import save_verdict

    try:
        if out is not None:
            claim_output_file(out)  # refused before any work: never a store or a foreign file
        data = verdict_data(store, compare, interval, say=lambda line: typer.echo(line, err=True))
        path = save_verdict(data, store, out)
    except CrsbenchError as exc:
        fail(exc)
        return
    if data.interval_note:
        typer.echo(f"NOTE: {data.interval_note}.", err=True)
    typer.echo(f"wrote {path}" + (f" (CRS intervals: {data.interval} bootstrap)"
                                  if data.interval else ""))  # fmt: skip
