"""mkdocs hook: turn the pages' plain references ``docs/NAME.md`` into links on the site.

The pages are written to read well as files too, so they name each other as ``docs/NAME.md``
(in backticks or not), often with a section: ``docs/protocol.md §5``, ``docs/protocol.md
section 10`` or ``docs/scoring.md``, "Control probes". On the site each such reference becomes
a link to that page and, when a section is named, to its heading's anchor. Every link made here
goes through mkdocs' own link and anchor validation, so ``mkdocs build --strict`` fails on a
reference to a page or section that does not exist. Fenced code blocks are left alone.
"""

from __future__ import annotations

import logging
import posixpath
import re
from pathlib import Path
from typing import Any

from markdown.extensions.toc import slugify

#: ``docs/NAME.md``, in backticks or bare, then an optional section: §N, section N, "Title".
REF = re.compile(
    r"(?<![\[/\w])(?P<tick>`?)docs/(?P<page>[A-Za-z0-9_\-/]+\.md)(?P=tick)"
    r"(?P<section>(?:,? ?§ ?(?P<num>\d+))|(?: section (?P<num2>\d+))|(?:, \"(?P<title>[^\"]+)\"))?"
)
LOG = logging.getLogger("mkdocs.hooks.doc_links")  # a warning fails `mkdocs build --strict`
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`[^`]*`)")


def sections(path: Path) -> list[tuple[str, str]]:
    """(section name, anchor) pairs of a Markdown file, in order; fenced code skipped.

    Each heading is a section with its own anchor; a paragraph that opens with a bold lead
    (``**Control probes.** ...``) is a section too, anchored at the heading above it.
    """
    out: list[tuple[str, str]] = []
    fenced, current = False, ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif fenced:
            continue
        elif line.startswith("#"):
            plain = re.sub(r"[`*_]", "", line.lstrip("#").strip())
            current = slugify(plain, "-")
            out.append((plain, current))
        elif (lead := re.match(r"\*\*([^*]+?)\.?\*\*", line)) and current:
            out.append((lead[1], current))
    return out


def anchor(found: list[tuple[str, str]], num: str | None, title: str | None) -> str:
    """Anchor of the section numbered ``num`` (``## 5. ...``) or named ``title``; '' if none."""
    for text, slug in found:
        if num is not None and re.match(rf"{num}\.\s", text):
            return slug
        if title is not None and text.lower().startswith(title.lower()):
            return slug
    return ""


def link_line(line: str, page_uri: str, docs_dir: Path) -> str:
    """``line`` with every ``docs/NAME.md`` reference outside other code spans made a link."""

    def replace(match: re.Match[str]) -> str:
        target = match["page"]
        if not (docs_dir / target).is_file():
            return match[0]  # left as text; not a page of this site
        num, title = match["num"] or match["num2"], match["title"]
        frag = anchor(sections(docs_dir / target), num, title)
        if (num or title) and not frag:
            LOG.warning(f"{page_uri}: section {num or title!r} of docs/{target} has no heading")
        href = posixpath.relpath(target, posixpath.dirname(page_uri) or ".")
        text = f"`docs/{target}`" if match["tick"] else f"docs/{target}"
        return f"[{text}]({href}{'#' + frag if frag else ''}){match['section'] or ''}"

    parts = CODE_SPAN.split(line)
    for i, part in enumerate(parts):
        is_code = part.startswith("`") and part.endswith("`") and len(part) > 1
        if is_code and not re.fullmatch(r"`docs/[A-Za-z0-9_\-/]+\.md`", part):
            continue
        if is_code:
            # the whole span is the reference; its section (§5, ...) opens the next part,
            # whose rest is then scanned as plain text on the next iteration
            nxt = parts[i + 1] if i + 1 < len(parts) else ""
            match = REF.match(part + nxt)
            assert match is not None  # the span is exactly `docs/NAME.md`
            parts[i] = replace(match)
            if i + 1 < len(parts):
                parts[i + 1] = (part + nxt)[match.end() :]
        else:
            parts[i] = REF.sub(replace, part)
    return "".join(parts)


def link_markdown(markdown: str, page_uri: str, docs_dir: Path) -> str:
    """Apply :func:`link_line` to every line outside fenced code blocks."""
    out, fenced = [], False
    for line in markdown.split("\n"):
        if FENCE.match(line):
            fenced = not fenced
            out.append(line)
        else:
            out.append(line if fenced else link_line(line, page_uri, docs_dir))
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """mkdocs event: link the page's ``docs/NAME.md`` references."""
    return link_markdown(markdown, page.file.src_uri, Path(config["docs_dir"]))
