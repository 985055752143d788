"""mkdocs hook: the command reference page, rendered from the Typer app at build time.

``crsbench --help`` and this page come from the same objects (``typer.main.get_command``),
so the page can never drift from the code; nothing generated is committed. Typer ships its
own copy of click, so commands and parameters are read by duck typing (``commands``,
``param_type_name``), never by ``isinstance`` against an installed ``click``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

PAGE = "cli_reference.md"
TITLE = "Command reference"
INTRO = (
    "Generated from the command line itself at build time: the same text as "
    "`crsbench COMMAND --help`. Output modes, `--quiet`/`--verbose`/`--json` and exit codes "
    "are described in [The command line](cli.md)."
)


def walk(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under ``group`` with its name path, depth first, in name order.

    Parameters
    ----------
    group : click command
        The root group (``typer.main.get_command(app)``) or any command.
    path : tuple of str
        Names leading to ``group`` (empty for the root).

    Yields
    ------
    (path, command)
        Hidden commands are left out; groups are yielded before their subcommands.
    """
    yield path, group
    subcommands = getattr(group, "commands", None) or {}
    for name in sorted(subcommands):
        cmd = subcommands[name]
        if not getattr(cmd, "hidden", False):
            yield from walk(cmd, (*path, name))


def plain(text: str) -> str:
    """Help text without ANSI styles, rich markup tags or click's ``\\b`` no-rewrap marker."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    text = re.sub(r"\[/?(?:bold|dim|italic|red|green|yellow|cyan|blue|magenta)[^\]]*\]", "", text)
    return text.replace("\b\n", "").strip()


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell (one line, pipes escaped)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def param_rows(cmd: Any, ctx: Any) -> list[str]:
    """One Markdown table row per visible parameter, as ``--help`` shows it (``--help`` left out).

    The names, metavar, help text, default and ``[required]`` mark are click's own help record,
    so the table says exactly what the terminal says.
    """
    rows = []
    for param in cmd.get_params(ctx):
        if getattr(param, "hidden", False) or param.name == "help":
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        rows.append(f"| `{_cell(names)}` | {_cell(plain(help_text))} |")
    return rows


def command_section(path: tuple[str, ...], cmd: Any) -> str:
    """The Markdown section of one command: usage, help, parameters, subcommands."""
    prog = " ".join(("crsbench", *path))
    ctx = cmd.context_class(cmd, info_name=prog)
    level = "#" * min(2 + max(len(path) - 1, 0), 4)
    lines = [f"{level} `{prog}`", ""]
    usage = " ".join((prog, *cmd.collect_usage_pieces(ctx)))
    lines += ["```text", usage, "```", ""]
    if cmd.help:
        lines += [plain(cmd.help), ""]
    if getattr(cmd, "commands", None):
        subs = ", ".join(f"`{n}`" for n in sorted(cmd.commands))
        lines += [f"Subcommands: {subs}.", ""]
    rows = param_rows(cmd, ctx)
    if rows:
        lines += ["| parameter | help |", "|---|---|"]
        lines += [*rows, ""]
    return "\n".join(lines)


def render(app: Any) -> str:
    """The whole reference page for a Typer ``app``."""
    import typer.main

    root = typer.main.get_command(app)
    sections = [f"# {TITLE}", "", INTRO, ""]
    for path, cmd in walk(root):
        if not path:
            if root.epilog:
                sections += [plain(root.epilog), ""]
            continue
        sections.append(command_section(path, cmd))
    return "\n".join(sections).rstrip() + "\n"


def on_files(files: Any, config: Any) -> Any:
    """mkdocs event: add the generated page to the site's files."""
    from mkdocs.structure.files import File

    from crsbench.cli import app

    files.append(File.generated(config, PAGE, content=render(app)))
    return files
