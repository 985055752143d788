"""Hypothesis strategies for the input fuzz test (tests/adversarial/test_fuzz_inputs.py).

Each strategy draws a plain description (cells, bytes, options) that :func:`write_case`
turns into files, so a failing example prints as data and shrinks: label CSVs (random
columns, encodings, separators, BOMs, quoting, blank / NaN / inf / huge values, duplicate and
differently spelled paths), small images (0 / 1 px up to 12 px, modes L, RGB, RGBA, I;16 and
F, non-finite float pixels, truncated files, bytes that are no image) and cohort YAMLs
(random keys, types and nesting around a valid base). Needs the ``hypothesis`` package (a
development dependency); only the tests import this module.
"""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

#: Cells that have broken parsers before, drawn beside random text.
ODD_CELLS: tuple[str, ...] = (
    "", " ", "0", "1", "-1", "1.0", "0.0", "2", "nan", "NaN", "NA", "N/A", "null", "None",
    "inf", "-inf", "Infinity", "1e400", "-1e400", "1e20", "99999999999999999999",
    "9007199254740993", "1.5", "0x1", "true", "FALSE", "yes", '"', "a,b", "a\nb", "\x00",
    "é", "\ufeff", "a/../a/x.png", "./img0.png", "img0.png ", "/etc/passwd", "../out.png",
    "[1]", "{}", "&a", "*a", "!!python/name:os.system", "'1'", "1;2",
)  # fmt: skip

MODES: tuple[str, ...] = ("L", "RGB", "RGBA", "I;16", "F")
IMAGE_KINDS: tuple[str, ...] = (
    "png", "jpeg", "tiff", "header", "truncated", "flipped", "bytes", "empty",
)  # fmt: skip


def cells() -> st.SearchStrategy[str]:
    """One CSV cell: an odd value, a small number or short random text."""
    return st.one_of(
        st.sampled_from(ODD_CELLS),
        st.integers(-3, 3).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.text(max_size=6),
    )


@dataclass(frozen=True)
class ImageSpec:
    """How one image file is written (see :func:`image_bytes`)."""

    kind: str
    mode: str = "L"
    width: int = 8
    height: int = 8
    fill: float = 0.0
    cut: float = 1.0
    raw: bytes = b""


def image_specs() -> st.SearchStrategy[ImageSpec]:
    """An image file: a real small image, a header-only PNG, a truncated file or noise."""
    side = st.integers(0, 12)
    return st.builds(
        ImageSpec,
        kind=st.sampled_from(IMAGE_KINDS),
        mode=st.sampled_from(MODES),
        width=st.one_of(side, st.sampled_from([1, 70_000, 2**31 - 1])),
        height=side,
        fill=st.one_of(st.floats(-1e6, 1e6), st.sampled_from([np.nan, np.inf, -np.inf])),
        cut=st.floats(0.0, 0.99),
        raw=st.binary(max_size=48),
    )


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims ``width`` x ``height`` (0 allowed) and whose data is empty."""

    def chunk(tag: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(tag + body) & 0xFFFFFFFF
        return struct.pack(">I", len(body)) + tag + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\x00" * min(height, 64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def _pixels(spec: ImageSpec) -> Any:
    from PIL import Image

    w, h = max(spec.width, 1) % 13 or 1, max(spec.height, 1)
    if spec.mode == "F":
        return Image.fromarray(np.full((h, w), spec.fill, dtype=np.float32), mode="F")
    value = 0 if not np.isfinite(spec.fill) else int(abs(spec.fill)) % 256
    return Image.new(spec.mode, (w, h), color=value if spec.mode in ("L", "I;16") else None)


def image_bytes(spec: ImageSpec) -> bytes:
    """The bytes of the file ``spec`` describes."""
    if spec.kind == "bytes":
        return spec.raw
    if spec.kind == "empty":
        return b""
    if spec.kind == "header":
        return _png_header_only(spec.width, spec.height)
    image = _pixels(spec)
    fmt = {"jpeg": "JPEG", "tiff": "TIFF"}.get(spec.kind, "PNG")
    if spec.mode == "F" or (fmt == "JPEG" and spec.mode not in ("L", "RGB")):
        fmt = "TIFF"  # what Pillow can write for that mode
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    data = buffer.getvalue()
    if spec.kind == "truncated":
        return data[: int(len(data) * spec.cut)]
    if spec.kind == "flipped":  # a few bytes of a valid file changed: header fields, CRCs
        out = bytearray(data)
        for i, byte in enumerate(spec.raw[:8]):
            out[(i * 7 + byte) % len(out)] ^= byte or 0xFF
        return bytes(out)
    return data


@dataclass(frozen=True)
class CsvStyle:
    """How a CSV's cells become bytes."""

    sep: str = ","
    newline: str = "\n"
    bom: bool = False
    encoding: str = "utf-8"
    quote_all: bool = False
    trailing_sep: bool = False


def csv_styles() -> st.SearchStrategy[CsvStyle]:
    """Mostly plain comma-separated UTF-8; sometimes another separator, encoding or quoting."""
    return st.builds(
        CsvStyle,
        sep=st.sampled_from([",", ",", ",", ";", "\t", "|"]),
        newline=st.sampled_from(["\n", "\r\n", "\r"]),
        bom=st.booleans(),
        encoding=st.sampled_from(["utf-8", "utf-8", "utf-16", "latin-1", "cp1252"]),
        quote_all=st.booleans(),
        trailing_sep=st.booleans(),
    )


def _quote(cell: str, style: CsvStyle) -> str:
    special = any(ch in cell for ch in (style.sep, '"', "\n", "\r"))
    if style.quote_all or special:
        return '"' + cell.replace('"', '""') + '"'
    return cell


def csv_bytes(rows: list[list[str]], style: CsvStyle) -> bytes:
    """``rows`` (header first) written in ``style``; unencodable characters become ``?``."""
    tail = style.sep if style.trailing_sep else ""
    lines = [style.sep.join(_quote(c, style) for c in row) + tail for row in rows]
    text = ("\ufeff" if style.bom else "") + style.newline.join(lines) + style.newline
    return text.encode(style.encoding, errors="replace")


@dataclass(frozen=True)
class Table:
    """A label table: a valid base of ``n_rows`` rows, then ``edits`` of single cells.

    ``columns`` are the base columns; ``extra`` columns are appended with random cells.
    """

    columns: tuple[str, ...]
    n_rows: int
    edits: tuple[tuple[int, int, str], ...] = ()
    extra: tuple[str, ...] = ()
    dropped: tuple[int, ...] = ()
    style: CsvStyle = field(default_factory=CsvStyle)


def tables(columns: tuple[str, ...], max_rows: int = 24) -> st.SearchStrategy[Table]:
    """A :class:`Table` over ``columns``: cell edits, extra or dropped columns, a style."""
    n_cols = len(columns)
    return st.builds(
        Table,
        columns=st.just(columns),
        n_rows=st.integers(1, max_rows),
        edits=st.lists(
            st.tuples(
                st.integers(0, max_rows) | st.integers(1, max_rows),
                st.integers(0, n_cols + 1),
                cells(),
            ),
            max_size=4,
        ).map(tuple),
        extra=st.just(())
        | st.lists(
            st.sampled_from(["", " ", "x", columns[0], "é"]) | st.text(max_size=4), max_size=2
        ).map(tuple),  # fmt: skip
        dropped=st.just(()) | st.lists(st.integers(0, n_cols - 1), max_size=1).map(tuple),
        style=st.just(CsvStyle()) | csv_styles(),
    )


def table_rows(table: Table, base_row: Any) -> list[list[str]]:
    """The table's rows, header first: ``base_row(i)`` gives the valid cells of row ``i``."""
    header = [*table.columns, *table.extra]
    body = [[*base_row(i), *("" for _ in table.extra)] for i in range(table.n_rows)]
    rows = [header, *body]
    for row, col, value in table.edits:
        target = rows[row % len(rows)]
        target[col % len(target)] = value
    keep = [j for j in range(len(header)) if j not in table.dropped]
    return [[r[j] for j in keep if j < len(r)] for r in rows]


def yaml_values() -> st.SearchStrategy[Any]:
    """A YAML value: scalars of every type, nested lists and mappings."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(ODD_CELLS),
        st.text(max_size=8),
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                    max_size=3),
        max_leaves=6,
    )  # fmt: skip


#: Raw YAML texts that are not a plain dump: aliases, duplicate keys, tags, bad syntax.
ODD_YAML: tuple[str, ...] = (
    "a: &x [1, 2]\nb: *x\n",
    "data: a.csv\ndata: b.csv\n",
    "label_columns: !!python/name:os.system\n",
    "- just\n- a list\n",
    "data: [unclosed\n",
    "\t- tab",
    "",
    "~",
    "images: !!binary aGVsbG8=\n",
    "max_images: 0x10\nseeds: [1, 2.5]\n",
    "labels_per_image: 'yes'\n",
    "label_columns: {a: 1}\n",
)


def write_case(root: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (relative path → bytes) under ``root``."""
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
