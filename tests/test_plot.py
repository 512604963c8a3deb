"""ssl-tune --plot: a valid PNG / SVG of the expected size, deterministic, and clear errors."""

import struct
import xml.etree.ElementTree as ET

from conftest import BIN, SAMPLES, run

from ssl_svm.cli.plot import is_geometric

PCMAC = SAMPLES / "pcmac.train"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    assert data.endswith(b"IEND\xaeB`\x82")  # complete: the final chunk and its CRC
    return struct.unpack(">II", data[16:24])


def test_one_axis_png(tmp):
    r = run("ssl-tune", "-a", "svm", "-G", "lambda=1e-4:10:x10", "--plot", tmp / "a.png",
            PCMAC, check=0)
    assert f"score plot written to {tmp / 'a.png'}" in r.stderr
    data = (tmp / "a.png").read_bytes()
    assert png_size(data) == (640, 480)
    run("ssl-tune", "-q", "-a", "svm", "-G", "lambda=1e-4:10:x10", "--plot", tmp / "b.png",
        PCMAC, check=0)
    assert (tmp / "b.png").read_bytes() == data  # equal runs, equal bytes


def test_two_axes_svg(tmp):
    run("ssl-tune", "-q", "-a", "tsvm", "-G", "lambda=1e-3,1e-2,1e-1", "-G",
        "lambda_u=0.1,1,10", "--plot", tmp / "g.svg", PCMAC, check=0)
    root = ET.parse(tmp / "g.svg").getroot()
    assert root.tag.endswith("svg")
    assert (root.get("width"), root.get("height")) == ("460.8pt", "345.6pt")  # 6.4 × 4.8 in
    text = (tmp / "g.svg").read_text()
    assert "lambda_u" in text and "best: lambda=" in text and "5-fold cross-validation" in text


def test_plot_errors(tmp):
    r = run("ssl-tune", "-a", "svm", "-G", "lambda=1,2", "--plot", tmp / "x.jpg", PCMAC,
            check=2)
    assert "must end in .png or .svg (the image format)" in r.stderr
    r = run("ssl-tune", "-a", "tsvm", "-G", "lambda=1,2", "-G", "lambda_u=1,2", "-G",
            "positive_fraction=0.4,0.5",
            "--plot", tmp / "x.png", PCMAC, check=2)
    assert "draws one or two -G axes (this grid has 3)" in r.stderr
    import subprocess

    code = ("import sys; sys.modules['matplotlib'] = None; from ssl_svm.cli.tune import main; "
            f"sys.exit(main(['-a', 'svm', '-G', 'lambda=1,2', '--plot', {str(tmp / 'x.png')!r}, "
            f"{str(PCMAC)!r}]))")
    p = subprocess.run([str(BIN / "python"), "-c", code], capture_output=True, text=True)
    assert p.returncode == 2, p.stderr
    assert "ssl-tune: error: --plot needs matplotlib: pip install matplotlib (in a source " \
        "checkout: pip install -e '.[plot]')" in p.stderr
    assert not (tmp / "x.png").exists() and p.stdout == ""  # checked before any fit


def test_geometric_axes():
    assert is_geometric([1e-4, 1e-3, 1e-2]) and is_geometric([0.5, 1, 2, 4])
    assert is_geometric([0.01, 3.0])  # two decades or more
    assert not is_geometric([1, 2, 3]) and not is_geometric(["linear", "rbf"])
    assert not is_geometric([0, 1, 10])
