#!/usr/bin/env python3
"""Render ``assets/installer/loadout.svg`` into the icon files the installers need.

    QT_QPA_PLATFORM=offscreen .venv/bin/python packaging/make_icons.py

Writes ``loadout-<N>.png`` (16 ... 1024), ``loadout.png`` (256), ``loadout.ico`` (Windows,
PNG-compressed entries) and ``loadout.icns`` (macOS) beside the SVG. Rendering uses Qt's
SVG module (already a dependency); the two container formats are written directly.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

ICONS = Path(__file__).resolve().parent.parent / "assets" / "installer"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512, 1024)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# icns chunk types that hold PNG data, by pixel size.
ICNS_TYPES = ((b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128), (b"ic08", 256),
              (b"ic09", 512), (b"ic10", 1024))


def render(svg: Path, size: int) -> bytes:
    """The SVG rendered as a ``size`` x ``size`` PNG with transparency."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    QSvgRenderer(str(svg)).render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs say bytes; str works
    return bytes(data.data())


def ico(pngs: dict[int, bytes]) -> bytes:
    """A Windows ``.ico`` holding the given PNGs (Vista+ reads PNG entries)."""
    sizes = [s for s in ICO_SIZES if s in pngs]
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    entries, blobs = b"", b""
    for size in sizes:
        blob = pngs[size]
        dim = 0 if size >= 256 else size  # 0 means 256 in an ICO directory entry
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(blob), offset)
        blobs += blob
        offset += len(blob)
    return header + entries + blobs


def icns(pngs: dict[int, bytes]) -> bytes:
    """A macOS ``.icns`` holding the given PNGs."""
    chunks = b"".join(kind + struct.pack(">I", 8 + len(pngs[size])) + pngs[size]
                      for kind, size in ICNS_TYPES if size in pngs)
    return b"icns" + struct.pack(">I", 8 + len(chunks)) + chunks


def main() -> int:
    """Write every icon file beside the SVG."""
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    svg = ICONS / "loadout.svg"
    pngs = {size: render(svg, size) for size in SIZES}
    for size, blob in pngs.items():
        (ICONS / f"loadout-{size}.png").write_bytes(blob)
    (ICONS / "loadout.png").write_bytes(pngs[256])
    (ICONS / "loadout.ico").write_bytes(ico(pngs))
    (ICONS / "loadout.icns").write_bytes(icns(pngs))
    print(f"wrote {len(pngs) + 3} icon files to {ICONS}")
    del app
    return 0


if __name__ == "__main__":
    sys.exit(main())
