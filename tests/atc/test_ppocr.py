"""examples/ppocr.py on the real PP-OCR models: the words read are the words drawn, and each
converted model computes what ONNX Runtime computes on the same input."""

import os
import sys
import tempfile

import numpy as np
import pytest

EXAMPLES = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples"
)
sys.path.insert(0, EXAMPLES)

import ppocr  # noqa: E402

import ascend_engine as ae  # noqa: E402

PIL = pytest.importorskip("PIL")
pytest.importorskip("PIL.Image")
LINES = ["HELLO WORLD 2026", "ascend engine", "Pipeline 42"]
TEN = ["first line", "second line", "third line", "fourth line", "fifth line", "sixth line", "seventh line",
       "eighth line", "ninth line", "tenth line"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    cache = os.environ.get("AE_PPOCR_MODELS") or os.path.join(tempfile.gettempdir(), "ascend-engine-ppocr")
    try:
        onnx_paths = ppocr.fetch_models(cache)
    except Exception as exc:  # no network and no cache: say so loudly
        pytest.skip(f"PP-OCR models unavailable ({exc}): the PP-OCR example was NOT checked")
    return onnx_paths, ppocr.convert_models(onnx_paths, str(tmp_path_factory.mktemp("ppocr")))


def test_the_words_read_are_the_words_drawn(models):
    onnx_paths, om = models
    chars = ppocr.characters(onnx_paths["rec"])
    with ppocr.build_pipeline(om).compile(depth=2) as engine:
        found = ppocr.read(engine, ppocr.text_picture(LINES), chars)
        upside_down = ppocr.read(engine, ppocr.text_picture(LINES[:1])[::-1, ::-1].copy(), chars)
    assert [t.replace(" ", "").lower() for t, _ in found] == [t.replace(" ", "").lower() for t in LINES]
    assert [t.replace(" ", "") for t, _ in upside_down] == ["HELLOWORLD2026"]  # the classifier turned it
    assert all(y1 > y0 and x1 > x0 for _, (y0, x0, y1, x1) in found)


def plain(text):
    return text.replace(" ", "").lower()


def test_every_line_of_a_taller_picture_is_read_where_it_was_drawn(models):
    onnx_paths, om = models
    chars = ppocr.characters(onnx_paths["rec"])
    picture = ppocr.text_picture(TEN, (720, 920))    # scaled by 640 / 920 for the detector
    with ppocr.build_pipeline(om).compile(depth=2) as engine:
        found = ppocr.read(engine, picture, chars)
    assert [plain(t) for t, _ in found] == [plain(t) for t in TEN]
    for i, (_, (y0, x0, y1, x1)) in enumerate(found):
        # text_picture draws line i from y = 24 + 90 i, 40 px high, at x = 24: boxes in its own pixels
        assert y0 <= 24 + 90 * i + 12 and y1 >= 24 + 90 * i + 30 and y1 - y0 < 90, (i, y0, y1)
        assert 0 <= x0 <= 30 and 100 < x1 <= 720
    with ppocr.build_pipeline(om, max_lines=4).compile(depth=2) as engine:
        with pytest.raises(ae.HostStepError, match="the picture holds 10 text lines, more than max_lines=4"):
            ppocr.read(engine, picture, chars)


def test_native_post_processing_reads_what_the_python_one_reads(models):
    onnx_paths, om = models
    chars = ppocr.characters(onnx_paths["rec"])
    pictures = [
        ppocr.text_picture(LINES),
        ppocr.text_picture(TEN[:5], (600, 480)),
        ppocr.text_picture(["Native steps", "without the GIL"], (900, 200)),
        ppocr.text_picture(LINES[:1])[::-1, ::-1].copy(),
        np.full((200, 300, 3), 255, np.uint8),          # no text at all
    ]
    with ppocr.build_pipeline(om, native=True).compile(depth=2) as native, \
            ppocr.build_pipeline(om, native=False).compile(depth=2) as python:
        for picture in pictures:
            assert ppocr.read(native, picture, chars) == ppocr.read(python, picture, chars)
        assert ppocr.read(native, pictures[-1], chars) == []
        assert len(ppocr.read(native, pictures[1], chars)) == 5


def test_each_model_equals_onnx_runtime(models):
    import onnxruntime as ort

    onnx_paths, om = models
    rng = np.random.default_rng(6)
    cases = {
        "det": rng.random((1, 3, 320, 640), np.float32),
        "cls": rng.random((4, 3, 48, 192), np.float32),
        "rec": rng.random((4, 3, 48, 320), np.float32),
    }
    for name, x in cases.items():
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        want = ort.InferenceSession(onnx_paths[name], so, providers=["CPUExecutionProvider"]).run(
            None, {"x": x}
        )[0]
        with ae.Model.load(om[name]) as m:
            got = next(iter(m(x=x).values()))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


def test_the_command_prints_every_line_in_picture_pixels_or_says_how_many_it_found(models, tmp_path, capsys):
    onnx_paths, _ = models
    picture = tmp_path / "ten.png"
    PIL.Image.fromarray(ppocr.text_picture(TEN, (720, 920))).save(picture)
    folder = os.path.dirname(onnx_paths["det"])
    assert ppocr.main([str(picture), "--models", folder]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [plain(line.split(": ", 1)[1]) for line in printed] == [plain(t) for t in TEN]
    assert printed[-1].startswith("(8")          # the tenth line, drawn at y = 834 of 920
    assert ppocr.main([str(picture), "--models", folder, "--max-lines", "4"]) == 1
    assert capsys.readouterr().err.strip() == (
        "ppocr.py: the picture holds 10 text lines, more than max_lines=4 (examples/ppocr.py --max-lines): "
        "none were read")
