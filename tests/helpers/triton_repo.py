"""A model repository laid out as a Triton user lays it out: ``NAME/config.pbtxt`` and
``NAME/VERSION/model.om`` (docs/serve.md, "A Triton model repository"), with the demo's models."""

import os
import shutil

from ascend_engine.sim.demo_models import write_demo

# the demo's encoder: x float32 [-1, 64] -> y float32 [-1, 128], batch gears 1, 2, 4, 8, 2 ms
ENCODER_CONFIG = """\
name: "encoder"
platform: "ascend_om"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 64 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 128 ] } ]
dynamic_batching { max_queue_delay_microseconds: 20000 preferred_batch_size: [ 8 ] }
instance_group [ { count: 1 kind: KIND_GPU gpus: [ 0 ] } ]
optimization { priority: PRIORITY_MAX }
"""

# the demo's head (x [-1, 128] -> y [-1, 10]) with its input sent as 8 x 16 and its output as 2 x 5
HEAD_CONFIG = """\
name: "head"
max_batch_size: 4
input [ { name: "x" data_type: TYPE_FP32 dims: [ 8, 16 ] reshape: { shape: [ 128 ] } } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 2, 5 ] reshape: { shape: [ 10 ] } } ]
version_policy: { all: { } }
"""

# a JPEG pipeline served with its bytes input as BYTES: decode and resize on the device, then the
# detector of examples/detector_classifier.py (static AIPP, NV12 in)
JPEG_SPEC = """\
inputs:
  jpeg: {dtype: bytes, max_bytes: 1048576}
images:
  - {name: decode, op: jpeg_decode, inputs: [jpeg], max_size: [1024, 1024]}
  - {name: resize, op: resize, inputs: decode, size: [64, 48]}
models:
  - {name: detector, path: detector_nv12.om, inputs: [resize]}
outputs: {scores: detector.scores, boxes: detector.boxes}
compile: {depth: 8}
"""

# contradicts its model: the encoder takes 64 values per row
BROKEN_CONFIG = ENCODER_CONFIG.replace('name: "encoder"', 'name: "broken"').replace("dims: [ 64 ]",
                                                                                  "dims: [ 32 ]")


def triton_repository(root) -> dict:
    """Write the repository under ``root``; returns {"repo": folder, "models": {demo model: .om path}}.

    ``encoder`` has versions 1 and 2 (the latest, 2, is served), ``head`` versions 1 and 2 (both
    served: version_policy all), ``broken`` a config that contradicts its model."""
    files = write_demo(os.path.join(root, "files"))
    repo = os.path.join(root, "models")
    layout = {"encoder": (ENCODER_CONFIG, "encoder", ("1", "2")),
              "head": (HEAD_CONFIG, "head", ("1", "2")),
              "broken": (BROKEN_CONFIG, "encoder", ("1",))}
    for name, (config, model, versions) in layout.items():
        for version in versions:
            os.makedirs(os.path.join(repo, name, version))
            shutil.copy(files["models"][model], os.path.join(repo, name, version, "model.om"))
        with open(os.path.join(repo, name, "config.pbtxt"), "w", encoding="utf-8") as f:
            f.write(config)
    return {"repo": repo, "models": files["models"]}
