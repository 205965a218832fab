"""PP-OCRv4 end to end on the simulator: the real ONNX models, converted by sim atc.

    text detector (DB, dynamic image size)
      -> host: DB post-processing of the probability map (threshold, regions,
               minimum-area rectangles, score, unclip: C code without the GIL,
               ascend_engine.steps.ocr), crop each line's bounding box,
               resize it to the classifier's and the recognizer's height at
               its own width (rows="any")
      -> direction classifier (dynamic batch)
      -> host: turn the lines it flags as upside down by 180 degrees
      -> recognizer (dynamic dims over lines x width)
      -> host: greedy CTC over each line's columns -> character indices (C)

The models are the ones the ``rapidocr-onnxruntime`` wheel ships (PP-OCRv4
detection and recognition, the mobile v2.0 direction classifier); the
character table is the recognizer's own (its ``character`` metadata). They
are converted with the flags an Ascend deployment uses:

    atc --framework=5 --soc_version=Ascend310P3 --model=det.onnx --output=det \\
        --input_shape="x:1,3,-1,-1" --dynamic_image_size="320,320;320,640;640,640"
    atc ... --model=cls.onnx --input_shape="x:-1,3,48,192" --dynamic_batch_size="1,2,4,8"
    atc ... --model=rec.onnx --input_format=ND --input_shape="x:-1,3,48,-1" \\
        --dynamic_dims="1,160;1,320;1,480;4,160;4,320;4,480;8,160;8,320;8,480"

Run:  python examples/ppocr.py picture.png [--models DIR] [--max-lines N] [--python]
(DIR: the wheel's models/ folder; without it the wheel is fetched with ``pip
download`` into a cache).  Boxes are printed as (y0, x0, y1, x1) in the
picture's own pixels: the bounding box of each text line's rotated DB box.  A
picture with more than --max-lines lines (default 32) fails with a message
saying how many were found.  ``--python`` runs the numpy versions of the
post-processing (the reference the native ones are tested against).
Simplification against PaddleOCR: each line is cropped along its bounding box
(horizontal text), not warped out of its rotated box.
"""

from __future__ import annotations

import argparse
import functools
import glob
import math
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

import ascend_engine as ae
from ascend_engine.sim.atc import convert_file
from ascend_engine.steps import ocr

DET_GEARS = ((320, 320), (320, 640), (640, 640))
CLS_HW = (48, 192)
REC_H = 48
REC_WIDTHS = (160, 320, 480)
REC_LINES = (1, 4, 8)
MAX_LINES = 32  # lines read per picture; a picture with more fails, saying so
MAX_COLUMNS = REC_WIDTHS[-1] // 8  # the recognizer's output columns at its widest gear
DET_MEAN = np.array([0.485, 0.456, 0.406], np.float32).reshape(3, 1, 1)
DET_STD = np.array([0.229, 0.224, 0.225], np.float32).reshape(3, 1, 1)
THRESHOLD, BOX_SCORE, UNCLIP = 0.3, 0.6, 1.5
WHEEL = "rapidocr-onnxruntime==1.4.4"
MODEL_FILES = {
    "det": "ch_PP-OCRv4_det_infer.onnx",
    "cls": "ch_ppocr_mobile_v2.0_cls_infer.onnx",
    "rec": "ch_PP-OCRv4_rec_infer.onnx",
}


# ---- the models ---------------------------------------------------------------------


def fetch_models(cache):
    """The wheel's three ONNX files in ``cache`` (pip download + unzip when missing)."""
    paths = {k: os.path.join(cache, f) for k, f in MODEL_FILES.items()}
    if all(os.path.exists(p) for p in paths.values()):
        return paths
    os.makedirs(cache, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL, "-d", cache], check=True
    )
    wheel = sorted(glob.glob(os.path.join(cache, "rapidocr_onnxruntime-*.whl")))[-1]
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if os.path.basename(name) in MODEL_FILES.values():
                with open(os.path.join(cache, os.path.basename(name)), "wb") as f:
                    f.write(z.read(name))
    return paths


def convert_models(onnx_paths, out_dir, soc="Ascend310P3"):
    """The three models converted by sim atc: {name: .om path}."""
    common = ["--framework=5", f"--soc_version={soc}"]
    det = ";".join(f"{h},{w}" for h, w in DET_GEARS)
    dims = ";".join(f"{n},{w}" for n in REC_LINES for w in REC_WIDTHS)
    flags = {
        "det": ["--input_shape=x:1,3,-1,-1", f"--dynamic_image_size={det}"],
        "cls": [f"--input_shape=x:-1,3,{CLS_HW[0]},{CLS_HW[1]}", "--dynamic_batch_size=1,2,4,8"],
        "rec": ["--input_format=ND", f"--input_shape=x:-1,3,{REC_H},-1", f"--dynamic_dims={dims}"],
    }
    return {
        k: convert_file(
            [f"--model={onnx_paths[k]}", f"--output={os.path.join(out_dir, k)}", *common, *flags[k]]
        )
        for k in flags
    }


def characters(rec_onnx):
    """The recognizer's character table: index 0 is the CTC blank, the last a space."""
    import onnx

    meta = {p.key: p.value for p in onnx.load(rec_onnx, load_external_data=False).metadata_props}
    return ["<blank>", *meta["character"].splitlines(), " "]


# ---- host code ------------------------------------------------------------------------


def det_input(image):
    """An RGB uint8 picture as the detector's input: normalized, zero-padded to the smallest gear
    holding it (a larger picture is scaled down to fit the largest)."""
    return _det_input(image)[0]


def picture_row(image):
    """The picture's row for the pipeline's ``picture`` input: (height, width, ratio_h, ratio_w),
    float32 (1, 4); a detector-input point (x, y) is the picture's (x / ratio_w, y / ratio_h)."""
    return _det_input(image)[1]


def _det_input(image):
    h0, w0 = image.shape[:2]
    h, w = h0, w0
    big_h, big_w = DET_GEARS[-1]
    scale = min(1.0, big_h / h, big_w / w)
    if scale < 1.0:
        image = resize(image, max(1, int(h * scale)), max(1, int(w * scale)))
        h, w = image.shape[:2]
    gh, gw = next((g for g in DET_GEARS if g[0] >= h and g[1] >= w), DET_GEARS[-1])
    x = np.zeros((1, 3, gh, gw), np.float32)
    x[0, :, :h, :w] = (image.transpose(2, 0, 1).astype(np.float32) / 255 - DET_MEAN) / DET_STD
    return x, np.array([[h0, w0, h / h0, w / w0]], np.float32)


def resize(image, h, w):
    from PIL import Image

    return np.asarray(Image.fromarray(image).resize((w, h), Image.BILINEAR))


def text_boxes(prob, native=True):
    """The DB boxes of a (H, W) probability map (ascend_engine.steps.ocr: PP-OCR's post-processing,
    by its C step or, native=False, its numpy reference) as axis-aligned bounding boxes (y0, x0, y1,
    x1) in map pixels (y1, x1 excluded), in reading order: rows of 16 pixels, then left to right."""
    find = ocr.db_boxes if native else ocr.db_boxes_reference
    quads, _scores = find(
        prob, name="find_lines", thresh=THRESHOLD, box_thresh=BOX_SCORE, unclip_ratio=UNCLIP
    )
    boxes = [
        (
            max(0, math.floor(q[:, 1].min())),
            max(0, math.floor(q[:, 0].min())),
            min(prob.shape[0], math.ceil(q[:, 1].max()) + 1),
            min(prob.shape[1], math.ceil(q[:, 0].max()) + 1),
        )
        for q in quads
    ]
    boxes = [b for b in boxes if b[2] > b[0] and b[3] > b[1]]
    boxes.sort(key=lambda b: (b[0] // 16, b[1]))
    return boxes


def line_at_height(crop, height, max_width):
    """A uint8 HWC crop resized to ``height`` at its own aspect ratio (at most max_width wide),
    as (x/255 - 0.5) / 0.5 CHW, and its width."""
    h, w = crop.shape[:2]
    width = int(min(max_width, max(1, math.ceil(height * w / h))))
    return (resize(crop, height, width).transpose(2, 0, 1).astype(np.float32) / 255 - 0.5) / 0.5, width


def find_lines(image, prob, picture, native=True, max_lines=MAX_LINES):
    """Host step 1: the text lines of one picture, for the classifier (48 x 192) and the recognizer
    (48 x its width, zero-padded to the widest gear), their widths, and their boxes (y0, x0, y1, x1)
    in the picture's own pixels.  More lines than ``max_lines`` fail the request, saying how many."""
    pixels = (
        np.clip(((image[0] * DET_STD + DET_MEAN) * 255).round(), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    )
    boxes = text_boxes(prob[0, 0], native)
    if len(boxes) > max_lines:
        raise ValueError(f"the picture holds {len(boxes)} text lines, more than max_lines={max_lines} "
                         "(examples/ppocr.py --max-lines): none were read")
    cls = np.zeros((len(boxes), 3, *CLS_HW), np.float32)
    rec = np.zeros((len(boxes), 3, REC_H, REC_WIDTHS[-1]), np.float32)
    widths = np.zeros(len(boxes), np.int32)
    for i, (y0, x0, y1, x1) in enumerate(boxes):
        crop = pixels[y0:y1, x0:x1]
        line, w = line_at_height(crop, CLS_HW[0], CLS_HW[1])
        cls[i, :, :, :w] = line
        line, widths[i] = line_at_height(crop, REC_H, REC_WIDTHS[-1])
        rec[i, :, :, : widths[i]] = line
    return cls, rec, widths, picture_boxes(boxes, picture[0])


def picture_boxes(boxes, picture):
    """Map-pixel boxes (y0, x0, y1, x1) in the picture's own pixels (picture: height, width,
    ratio_h, ratio_w), clamped to it."""
    h, w, rh, rw = (float(v) for v in picture)
    out = np.zeros((len(boxes), 4), np.int32)
    for i, (y0, x0, y1, x1) in enumerate(boxes):
        out[i] = (
            max(0, math.floor(y0 / rh)),
            max(0, math.floor(x0 / rw)),
            min(int(h), math.ceil(y1 / rh)),
            min(int(w), math.ceil(x1 / rw)),
        )
    return out


def upright(rec, widths, cls_probs):
    """Host step 2: lines the classifier calls upside down (class 1 above 0.9) turned by 180 degrees
    within their width; all as wide as the request's widest line."""
    width = int(widths.max(initial=1))
    lines = np.zeros((len(rec), 3, REC_H, width), np.float32)
    for i, (line, w, p) in enumerate(zip(rec, widths, cls_probs, strict=True)):
        part = line[:, :, :w]
        lines[i, :, :, :w] = part[:, ::-1, ::-1] if p.argmax() == 1 and p[1] > 0.9 else part
    return lines


def ctc(probs):
    """Host step 3 (numpy): greedy CTC per line: the best character per column, repeats merged,
    blanks dropped; -1 pads each row of indices."""
    best = probs.argmax(axis=-1)
    out = np.full((len(best), MAX_COLUMNS), -1, np.int32)
    for i, row in enumerate(best):
        keep = [c for j, c in enumerate(row) if c != 0 and (j == 0 or c != row[j - 1])]
        out[i, : len(keep)] = keep
    return out


def ctc_native(probs):
    """Host step 3 in C (ascend_engine.steps.ocr.ctc_greedy, without the GIL): what :func:`ctc` does."""
    return ocr.ctc_greedy(probs, blank=0, max_chars=MAX_COLUMNS)


def build_pipeline(om, native=True, max_lines=MAX_LINES) -> ae.Pipeline:
    """The pipeline; ``native``: its DB post-processing and CTC in C, else in numpy."""
    pipe = ae.Pipeline(device=0)
    image = pipe.input("image", "float32", (1, 3, -1, -1))
    picture = pipe.input("picture", "float32", (1, 4))
    prob = pipe.model(om["det"], image, name="det")
    cls_in, rec_in, widths, boxes = pipe.host(
        functools.partial(find_lines, native=native, max_lines=max_lines),
        image,
        prob,
        picture,
        name="find_lines",
        rows="any",
        max_rows=max_lines,
        outputs=[
            ("cls", "float32", (-1, 3, *CLS_HW)),
            ("rec", "float32", (-1, 3, REC_H, REC_WIDTHS[-1])),
            ("widths", "int32", (-1,)),
            ("boxes", "int32", (-1, 4)),
        ],
    )
    cls_probs = pipe.model(om["cls"], cls_in, name="cls")
    lines = pipe.host(
        upright, rec_in, widths, cls_probs, name="upright", outputs=[("lines", "float32", (-1, 3, REC_H, -1))]
    )
    rec_probs = pipe.model(om["rec"], lines, name="rec")
    text = pipe.host(
        ctc_native if native else ctc, rec_probs, name="ctc", outputs=[("text", "int32", (-1, MAX_COLUMNS))]
    )
    pipe.output("text", text)
    pipe.output("boxes", boxes)
    return pipe


def text_picture(lines, size=(720, 300)):
    """An RGB uint8 picture of ``lines`` of black text on white (Pillow's default font, 40 px, one
    line every 90 px): something to read without a photo at hand."""
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(im)
    font = ImageFont.load_default(size=40)
    for i, text in enumerate(lines):
        draw.text((24, 24 + 90 * i), text, fill="black", font=font)
    return np.asarray(im)


def read(engine, image, chars):
    """The lines of text in an RGB uint8 picture: [(text, (y0, x0, y1, x1) in its pixels)]."""
    x, picture = _det_input(image)
    out = engine.run({"image": x, "picture": picture})
    return [
        ("".join(chars[c] for c in row if c >= 0), tuple(int(v) for v in box))
        for row, box in zip(out["text"], out["boxes"], strict=True)
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("picture", help="an image file (anything Pillow opens)")
    p.add_argument("--models", help="folder holding the three ONNX files (default: fetch the wheel)")
    p.add_argument("--max-lines", type=int, default=MAX_LINES,
                   help=f"most text lines read in one picture (default {MAX_LINES}); more fail, saying so")
    p.add_argument("--python", action="store_true", help="post-process in numpy instead of C")
    args = p.parse_args(argv)
    if args.max_lines < 1:
        p.error(f"--max-lines must be at least 1, got {args.max_lines}")
    from PIL import Image

    onnx_paths = fetch_models(args.models or os.path.join(tempfile.gettempdir(), "ascend-engine-ppocr"))
    with tempfile.TemporaryDirectory() as out:
        om = convert_models(onnx_paths, out)
        with build_pipeline(om, native=not args.python, max_lines=args.max_lines).compile(depth=2) as engine:
            image = np.asarray(Image.open(args.picture).convert("RGB"))
            try:
                found = read(engine, image, characters(onnx_paths["rec"]))
            except ae.HostStepError as exc:  # too many lines: the step's own message, not its traceback
                print(f"ppocr.py: {exc.__cause__ or exc}", file=sys.stderr)
                return 1
            for text, box in found:
                print(f"{box}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
