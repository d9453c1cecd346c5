"""The paper's functions (003, Appendices A.1-A.3) on real inputs, run directly (no platform)."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FOLDER = HERE.parent
REPO = FOLDER.parents[1]
BUILD = FOLDER / "build"
sys.path.insert(0, str(REPO))
from tools.fdirector.director import png_size  # noqa: E402

IMAGEMAGICK = Path("/usr/bin")  # Debian's, not any convert earlier on PATH (MACHINE-FACTS)


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(FOLDER), "all"], check=True)


def run(binary: str, data: bytes, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(BUILD / binary)], input=data, capture_output=True, check=check, timeout=60)


def pixels(png: bytes) -> bytes:
    """Decoded 16-bit RGB samples (also proves the PNG decodes)."""
    return subprocess.run([str(IMAGEMAGICK / "convert"), "png:-", "-depth", "16", "rgb:-"], input=png,
                          capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    out = tmp_path_factory.mktemp("img")
    subprocess.run([str(BUILD / "mkimages"), "--out", str(out), "--count", "4", "--size", "64", "--small-size", "48",
                    "--small-every", "2"], check=True, capture_output=True)
    return sorted(out.glob("*.png"))


@pytest.mark.parametrize("size", [0, 1, 2, 3, 4096, 65537, 3 * 2**20 + 17])
def test_reverse_cpp_returns_the_reverse(size):
    data = bytes((i * 131 + size) % 251 for i in range(min(size, 4096))) * (size // 4096 + 1)
    data = data[:size]
    out = run("reverse", data).stdout
    assert out == data[::-1]
    assert len(out) == size


def test_reverse_go_handler_unit_tests():
    done = subprocess.run(["go", "test", "./..."], cwd=FOLDER / "go", capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout


def test_generator_mix_names_and_format(images):
    names = [p.name for p in images]
    assert names == ["img00001_64x64.png", "img00002_48x48.png", "img00003_64x64.png", "img00004_48x48.png"]
    for p in images:
        data = p.read_bytes()
        side = int(p.name.split("_")[1].split("x")[0])
        assert png_size(data) == (side, side)
        assert data[24] == 16 and data[25] == 2, "want 16-bit RGB (colour type 2, no alpha)"
        samples = pixels(data)
        assert len(samples) == side * side * 3 * 2
        assert len(set(samples[i:i + 2] for i in range(0, len(samples), 2))) > side * side // 4, "content too trivial"


def test_generator_is_deterministic_and_full_size(tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        subprocess.run([str(BUILD / "mkimages"), "--out", str(tmp_path / d), "--count", "1"], check=True,
                       capture_output=True)
    a, b = ((tmp_path / d / "img00001_800x800.png").read_bytes() for d in ("a", "b"))
    assert a == b
    assert png_size(a) == (800, 800) and a[24] == 16 and a[25] == 2
    assert len(a) > 2 * 2**20, "an 800x800 16-bit image with noise should not compress far below the paper's 3 MiB"


def test_generator_matches_the_papers_image_set_shape(tmp_path):
    """The paper's 1,000 TESTIMAGES PNGs: 960 of 800x800 and 40 of 600x600, 16-bit RGB, 2,969 MiB in all
    (Sec. 2.4): one image of each size, their mean weighted 960/40, within 5 % of 2.969 MiB."""
    subprocess.run([str(BUILD / "mkimages"), "--out", str(tmp_path), "--count", "2", "--small-every", "2"], check=True,
                   capture_output=True)
    big, small = (tmp_path / "img00001_800x800.png").read_bytes(), (tmp_path / "img00002_600x600.png").read_bytes()
    for data, side in ((big, 800), (small, 600)):
        assert png_size(data) == (side, side) and data[24] == 16 and data[25] == 2, "16-bit RGB, no alpha"
    mean_mib = (960 * len(big) + 40 * len(small)) / 1000 / 2**20
    assert abs(mean_mib / 2.969 - 1) < 0.05, f"paper-mix mean {mean_mib:.3f} MiB, the paper's 2.969 MiB"


def test_generator_rejects_bad_arguments(tmp_path):
    done = subprocess.run([str(BUILD / "mkimages"), "--out", str(tmp_path), "--count", "zero"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "--count must be a positive integer" in done.stderr


def test_imageproc_transforms_the_image(images):
    for p in images:
        data = p.read_bytes()
        out = run("imageproc", data).stdout
        w, h = png_size(data)
        # wave() (default amplitude 25) adds 2*amplitude rows: the paper's chain changes the height
        assert png_size(out) == (w, h + 50)
        decoded = pixels(out)
        assert len(decoded) == w * (h + 50) * 6
        assert out != data


def test_imageproc_rejects_non_png_input():
    done = run("imageproc", b"this is no image", check=False)
    assert done.returncode == 1
    assert b"imageproc" in done.stderr and done.stdout == b""
    assert run("imageproc", b"", check=False).stderr.find(b"empty input") >= 0


def test_null_processing_returns_the_input_after_sleeping(images):
    data = images[0].read_bytes()
    t = time.monotonic()
    out = run("imageproc-np", data).stdout
    took = time.monotonic() - t
    assert png_size(out) == png_size(data)
    assert pixels(out) == pixels(data), "NP must send the loaded image back unchanged"
    assert took >= 1.0, "the NP variant sleeps 1 s per image (behaviour, not a benchmark)"
