"""PP-OCRv4 end to end on the simulator: the real ONNX models, converted by sim atc.

    text detector (DB, dynamic image size)
      -> host: threshold the probability map, one box per text region,
               unclip it, crop the line, resize it to the classifier's and
               the recognizer's height at its own width (rows="any")
      -> direction classifier (dynamic batch)
      -> host: turn the lines it flags as upside down by 180 degrees
      -> recognizer (dynamic dims over lines x width)
      -> host: greedy CTC over each line's columns -> character indices

The models are the ones the ``rapidocr-onnxruntime`` wheel ships (PP-OCRv4
detection and recognition, the mobile v2.0 direction classifier); the
character table is the recognizer's own (its ``character`` metadata). They
are converted with the flags an Ascend deployment uses:

    atc --framework=5 --soc_version=Ascend310P3 --model=det.onnx --output=det \\
        --input_shape="x:1,3,-1,-1" --dynamic_image_size="320,320;320,640;640,640"
    atc ... --model=cls.onnx --input_shape="x:-1,3,48,192" --dynamic_batch_size="1,2,4,8"
    atc ... --model=rec.onnx --input_format=ND --input_shape="x:-1,3,48,-1" \\
        --dynamic_dims="1,160;1,320;1,480;4,160;4,320;4,480;8,160;8,320;8,480"

Run:  python examples/ppocr.py picture.png [--models DIR]   (DIR: the wheel's models/
folder; without it the wheel is fetched with ``pip download`` into a cache).
Simplifications against PaddleOCR's post-processing: boxes are axis-aligned
(horizontal text), unclipping expands the box by area * 1.5 / perimeter.
"""

from __future__ import annotations

import argparse
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

DET_GEARS = ((320, 320), (320, 640), (640, 640))
CLS_HW = (48, 192)
REC_H = 48
REC_WIDTHS = (160, 320, 480)
REC_LINES = (1, 4, 8)
MAX_LINES = 8
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
    h, w = image.shape[:2]
    big_h, big_w = DET_GEARS[-1]
    scale = min(1.0, big_h / h, big_w / w)
    if scale < 1.0:
        image = resize(image, max(1, int(h * scale)), max(1, int(w * scale)))
        h, w = image.shape[:2]
    gh, gw = next((g for g in DET_GEARS if g[0] >= h and g[1] >= w), DET_GEARS[-1])
    x = np.zeros((1, 3, gh, gw), np.float32)
    x[0, :, :h, :w] = (image.transpose(2, 0, 1).astype(np.float32) / 255 - DET_MEAN) / DET_STD
    return x


def resize(image, h, w):
    from PIL import Image

    return np.asarray(Image.fromarray(image).resize((w, h), Image.BILINEAR))


def text_boxes(prob):
    """Axis-aligned boxes (y0, x0, y1, x1) of the regions above THRESHOLD whose mean probability
    reaches BOX_SCORE, each grown by UNCLIP * area / perimeter on every side."""
    from scipy import ndimage

    labels, _n = ndimage.label(prob > THRESHOLD)
    boxes = []
    for k, sl in enumerate(ndimage.find_objects(labels), start=1):
        if sl is None:
            continue
        y0, y1, x0, x1 = sl[0].start, sl[0].stop, sl[1].start, sl[1].stop
        h, w = y1 - y0, x1 - x0
        if min(h, w) < 3 or prob[sl][labels[sl] == k].mean() < BOX_SCORE:
            continue
        d = UNCLIP * h * w / (2 * (h + w))
        boxes.append(
            (
                max(0, int(y0 - d)),
                max(0, int(x0 - d)),
                min(prob.shape[0], int(math.ceil(y1 + d))),
                min(prob.shape[1], int(math.ceil(x1 + d))),
            )
        )
    boxes.sort(key=lambda b: (b[0] // 16, b[1]))  # reading order: rows, then left to right
    return boxes[:MAX_LINES]


def line_at_height(crop, height, max_width):
    """A uint8 HWC crop resized to ``height`` at its own aspect ratio (at most max_width wide),
    as (x/255 - 0.5) / 0.5 CHW, and its width."""
    h, w = crop.shape[:2]
    width = int(min(max_width, max(1, math.ceil(height * w / h))))
    return (resize(crop, height, width).transpose(2, 0, 1).astype(np.float32) / 255 - 0.5) / 0.5, width


def find_lines(image, prob):
    """Host step 1: the text lines of one picture, for the classifier (48 x 192) and the recognizer
    (48 x its width, zero-padded to the widest gear), their widths and boxes."""
    pixels = (
        np.clip(((image[0] * DET_STD + DET_MEAN) * 255).round(), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    )
    boxes = text_boxes(prob[0, 0])
    cls = np.zeros((len(boxes), 3, *CLS_HW), np.float32)
    rec = np.zeros((len(boxes), 3, REC_H, REC_WIDTHS[-1]), np.float32)
    widths = np.zeros(len(boxes), np.int32)
    for i, (y0, x0, y1, x1) in enumerate(boxes):
        crop = pixels[y0:y1, x0:x1]
        line, w = line_at_height(crop, CLS_HW[0], CLS_HW[1])
        cls[i, :, :, :w] = line
        line, widths[i] = line_at_height(crop, REC_H, REC_WIDTHS[-1])
        rec[i, :, :, : widths[i]] = line
    return cls, rec, widths, np.array(boxes, np.int32).reshape(-1, 4)


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
    """Host step 3: greedy CTC per line: the best character per column, repeats merged, blanks
    dropped; -1 pads each row of indices."""
    best = probs.argmax(axis=-1)
    out = np.full((len(best), MAX_COLUMNS), -1, np.int32)
    for i, row in enumerate(best):
        keep = [c for j, c in enumerate(row) if c != 0 and (j == 0 or c != row[j - 1])]
        out[i, : len(keep)] = keep
    return out


def build_pipeline(om) -> ae.Pipeline:
    pipe = ae.Pipeline(device=0)
    image = pipe.input("image", "float32", (1, 3, -1, -1))
    prob = pipe.model(om["det"], image, name="det")
    cls_in, rec_in, widths, boxes = pipe.host(
        find_lines,
        image,
        prob,
        name="find_lines",
        rows="any",
        max_rows=MAX_LINES,
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
    text = pipe.host(ctc, rec_probs, name="ctc", outputs=[("text", "int32", (-1, MAX_COLUMNS))])
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
    """The lines of text in an RGB uint8 picture: [(text, (y0, x0, y1, x1))]."""
    out = engine.run({"image": det_input(image)})
    return [
        ("".join(chars[c] for c in row if c >= 0), tuple(int(v) for v in box))
        for row, box in zip(out["text"], out["boxes"], strict=True)
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("picture", help="an image file (anything Pillow opens)")
    p.add_argument("--models", help="folder holding the three ONNX files (default: fetch the wheel)")
    args = p.parse_args(argv)
    from PIL import Image

    onnx_paths = fetch_models(args.models or os.path.join(tempfile.gettempdir(), "ascend-engine-ppocr"))
    with tempfile.TemporaryDirectory() as out:
        om = convert_models(onnx_paths, out)
        with build_pipeline(om).compile(depth=2) as engine:
            image = np.asarray(Image.open(args.picture).convert("RGB"))
            for text, box in read(engine, image, characters(onnx_paths["rec"])):
                print(f"{box}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
