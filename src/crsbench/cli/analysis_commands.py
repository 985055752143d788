"""CLI commands of this group; each registers itself on the root app."""

from __future__ import annotations

from crsbench.cli.app import app, console, fail  # noqa: F401
