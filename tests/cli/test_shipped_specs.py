"""Every pipeline spec the repository ships -- the demo's, and each YAML or JSON spec in README.md
and docs/ -- runs under ``bench`` and ``trace`` with their defaults.

Each spec is written beside the models it names (the demo's, the
detector/classifier example's, the OCR-style det/rec pair) and run with no
option but a short run and the files to write; a default that does not fit a
shipped spec (a batch above a host step's ``max_rows``) fails here.
"""

import json
import os
import re
import shutil
import sys

import pytest
from cli_run import error_line, ok, run_cli
from helpers import shaped

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
DOCUMENTS = ["README.md", *sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(REPO, "docs"))
                                  if f.endswith(".md"))]


def shipped_specs():
    """(where, suffix, text) of every spec block in the documents: a yaml or json block with models."""
    found = []
    for doc in DOCUMENTS:
        with open(os.path.join(REPO, doc), encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"```(yaml|json)\n(.*?)```", text, re.S):
            if re.search(r"""^\s*("models"|models):""", m.group(2), re.M):
                line = text.count("\n", 0, m.start()) + 1
                found.append((f"{doc}:{line}", "." + m.group(1), m.group(2)))
    return found


SPECS = shipped_specs()


def models_for(folder, text):
    """Write the models ``text`` names into ``folder``; returns the options it needs (--allow-code)."""
    from ascend_engine.sim.demo_models import write_demo

    if "encoder.om" in text:
        write_demo(str(folder))
    if "detector.om" in text:
        sys.path.insert(0, EXAMPLES)
        import detector_classifier

        detector_classifier.build_models(str(folder))
        # the host step's modules, beside the spec
        for name in ("detector_classifier.py", "_models.py", "_images.py"):
            shutil.copy(os.path.join(EXAMPLES, name), folder)
    if "detector_nv12.om" in text:   # the all-device variant (image steps)
        sys.path.insert(0, EXAMPLES)
        import detector_classifier

        detector_classifier.build_image_models(str(folder))
        for name in ("detector_classifier.py", "_models.py", "_images.py"):
            shutil.copy(os.path.join(EXAMPLES, name), folder)
    if "det.om" in text and "text_det.om" not in text:
        shaped.build(folder)
    if "text_det.om" in text:   # a text detector's probability map, then the DB step of ocr_steps.py
        write_text_detector(folder)
    if "yolox_head.om" in text:   # the native steps' detector head and classifier (tests/helpers/steps.py)
        from helpers.steps import classifier_graph, head_graph

        head_graph().save(os.path.join(folder, "yolox_head.om"), batch_sizes=(1, 2, 4))
        classifier_graph().save(os.path.join(folder, "crop_classifier.om"), batch_sizes=(1, 2, 4, 8))
    return ["--allow-code"] if "function:" in text else []   # native steps (step:) are not code


def write_text_detector(folder):
    """A stand-in for docs/pipeline-spec.md's text detector (one 640 x 640 map, the channels'
    mean through a sigmoid) and the module its DB step comes from, as the document writes it."""
    from ascend_engine import sim

    g = sim.Graph("text_det")
    image = g.input("image", "float32", (1, 3, 640, 640))
    g.output("map", g.sigmoid(g.mean(image, axes=(1,), keepdims=True)))
    g.save(os.path.join(folder, "text_det.om"))
    with open(os.path.join(REPO, "docs", "pipeline-spec.md"), encoding="utf-8") as f:
        module = re.search(r"```python\n# ocr_steps.py\n(.*?)```", f.read(), re.S).group(1)
    with open(os.path.join(folder, "ocr_steps.py"), "w", encoding="utf-8") as f:
        f.write(module)


def test_the_documents_ship_the_specs_this_test_runs():
    where = [w.split(":")[0] for w, _, _ in SPECS]
    assert "README.md" in where and "docs/pipeline-spec.md" in where and "docs/cli.md" in where
    assert any("host:" in text for _, _, text in SPECS)            # README's detector -> NMS -> classifier
    assert any("bench_shape" in text for _, _, text in SPECS)      # a pipeline with dynamic shapes


@pytest.mark.parametrize("where, suffix, text", SPECS, ids=[w for w, _, _ in SPECS])
def test_bench_and_trace_run_with_their_defaults(where, suffix, text, tmp_path):
    options = models_for(tmp_path, text)
    spec = tmp_path / f"shipped{suffix}"
    spec.write_text(text)
    out = tmp_path / "b.json"
    proc = ok(run_cli("bench", str(spec), *options, "--requests", "12", "--warmup", "2", "--no-progress",
                      "--json", str(out), cwd=str(tmp_path)))
    fig = json.loads(out.read_text())
    assert fig["requests"] == 12 and fig["config"]["profile"] is False
    assert fig["config"]["batch"] == 1
    labels = fig["step_labels"]
    for node, label in labels.items():
        kind = ("host step" if f"name: {node}\n    function" in text or f"{{name: {node}, step:" in text else
                "image step" if f"{{name: {node}, op:" in text else "model")
        assert label == f"{kind} {node}"
    assert f"{len(labels)} step" in proc.stdout and ", ".join(labels.values()) in proc.stdout
    trace = tmp_path / "t.json"
    proc = ok(run_cli("trace", str(spec), *options, "--out", str(trace), cwd=str(tmp_path)))
    assert re.search(r"trace     : .*: \d+ spans on \d+ lanes over [\d.]+ ms \(16 requests", proc.stdout)
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(e.get("ph") == "X" for e in events) >= 16 * len(labels)


def test_a_batch_above_what_max_rows_holds_says_how_to_fix_it(tmp_path):
    where, suffix, text = next(s for s in SPECS if "host:" in s[2] and s[0].startswith("README.md"))
    options = models_for(tmp_path, text)
    spec = tmp_path / f"shipped{suffix}"
    spec.write_text(text)
    proc = run_cli("bench", str(spec), *options, "--batch", "16", "--requests", "4", "--warmup", "0",
                   "--no-progress", cwd=str(tmp_path))
    assert proc.returncode == 1
    line = error_line(proc)
    assert "HostStepError: " in line and "its max_rows is 32" in line, line
    assert line.endswith("(max_rows bounds the rows of one request: a smaller --batch gives the step fewer)")
