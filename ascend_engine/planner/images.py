"""Image nodes: JPEG decode, resize and crop-resize on DVPP (docs/executor.md, "Image nodes").

The builder (:class:`~ascend_engine.planner.builder.Pipeline`) records them
through :func:`image_node`; :func:`check_image_node` checks each against what
feeds it and gives its output its row domain, :func:`check_image_readers`
checks the models reading pictures, and :func:`plan_image` lowers one to its
plan node.  Every picture is NV12 (YUV420SP): ``(rows, height * 3 / 2,
width, 1)`` uint8, the layout a static-AIPP ``YUV420SP_U8`` input takes, at
a width that is a multiple of 16 and an even height, so the VPC's strides
equal the picture's size.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ascend_engine import _dvpp_limits as _limits
from ascend_engine._feeds import shape_text
from ascend_engine.errors import PipelineError
from ascend_engine.native_step import BuiltinStep
from ascend_engine.planner.plan import PlanNode

# The DVPP limits: include/ascend_engine/dvpp_limits.h's, the table the executor's C reads too.
JPEGD_MIN, JPEGD_MAX = _limits.JPEGD_MIN_SIDE, _limits.JPEGD_MAX_SIDE   # JPEGD's input sides
VPC_MIN_W, VPC_MIN_H, VPC_MAX = _limits.VPC_OUT_MIN_W, _limits.VPC_OUT_MIN_H, _limits.VPC_OUT_MAX_SIDE
MAX_BOXES = _limits.MAX_BOXES          # regions of one batch crop call
MAX_UP, MAX_DOWN = _limits.VPC_MAX_UP, _limits.VPC_MAX_DOWN   # each side scales from 1/32 to 16 times
INTERPOLATIONS = {"default": 0, "bilinear": 1, "nearest": 2}
OPS = ("decode", "resize", "crop_resize")


def nv12_shape(width: int, height: int) -> tuple:
    """The tensor shape of NV12 pictures of ``width`` x ``height``, rows first."""
    return (-1, height * 3 // 2, width, 1)


def decoded_bytes(width: int, height: int) -> int:
    """Bytes of a decoded picture of at most ``width`` x ``height`` (JPEGD's
    strides: width to 128, the largest alignment of any SoC, height to 16)."""
    align = _limits.JPEGD_HEIGHT_ALIGN
    return -(-width // 128) * 128 * (-(-height // align) * align) * 3 // 2


def check_size(size, where, low_w, low_h, high, even=True) -> tuple:
    """A (width, height) within limits; VPC outputs: width a multiple of 16, height even."""
    if (not isinstance(size, (tuple, list)) or len(size) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in size)):
        raise PipelineError(f"{where}: the size must be (width, height) in pixels, got {size!r}")
    w, h = size
    if not (low_w <= w <= high and low_h <= h <= high):
        raise PipelineError(f"{where}: {w}x{h} is outside the DVPP's {low_w}x{low_h} to {high}x{high}")
    if even and (w % VPC_MIN_W or h % 2):
        raise PipelineError(f"{where}: {w}x{h}: a picture for the VPC and the AIPP has a width that is a "
                            f"multiple of 16 and an even height (its strides are then its size)")
    return int(w), int(h)


def image_node(pipe, op, inputs, size, name, max_boxes=0, interpolation="default", max_bytes=0):
    """Record an image node on ``pipe`` (a Pipeline) and return its output handle."""
    from ascend_engine.planner.builder import _Node

    if name is None:
        name = f"{op}{sum(n.kind == 'image' for n in pipe._nodes)}"
    where = f"{op} {name!r}"
    if name in pipe._names:
        raise PipelineError(f"{where}: the name is already used in this pipeline")
    handles = [pipe._check(h, where) for h in inputs]
    if interpolation not in INTERPOLATIONS:
        raise PipelineError(f"{where}: interpolation must be one of {sorted(INTERPOLATIONS)}, "
                            f"got {interpolation!r}")
    if op == "decode":
        w, h = check_size(size, where, JPEGD_MIN, JPEGD_MIN, JPEGD_MAX, even=False)
        out_shape = (-1, decoded_bytes(w, h))
    else:
        w, h = check_size(size, where, VPC_MIN_W, VPC_MIN_H, VPC_MAX)
        out_shape = nv12_shape(w, h)
    image = {"op": op, "size": (w, h), "interpolation": INTERPOLATIONS[interpolation]}
    if op == "crop_resize":
        if not isinstance(max_boxes, int) or isinstance(max_boxes, bool) or not 0 <= max_boxes <= MAX_BOXES:
            raise PipelineError(f"{where}: max_boxes must be 1 to {MAX_BOXES} (one batch crop call), "
                                f"got {max_boxes!r}")
        image["max_boxes"] = max_boxes
        handles[1] = model_boxes(pipe, name, handles[1], max_boxes)
        image["boxes_float"] = handles[1].dtype == np.float32
    node = _Node(name, None, handles, kind="image", image=image)
    pipe._names.add(name)
    pipe._nodes.append(node)
    node.outputs.append(pipe._new_tensor(f"{name}.image", np.dtype(np.uint8), out_shape))
    return node.outputs[0]


def model_boxes(pipe, crop, boxes, max_boxes):
    """``boxes`` as crop_resize ``crop`` reads them: a model output goes
    through a native host step the planner puts before the crop,
    ae_rows_to_boxes (executor.h), which brings the boxes to the host (the
    VPC's batch crop takes its regions from the host when it is enqueued) as
    (rows x K, 4) rows; any other handle is returned as it is.  The step's
    function is bound at plan() (:func:`size_box_steps`)."""
    from ascend_engine.planner.builder import _Node

    producer = next((n for n in pipe._nodes if any(h.index == boxes.index for h in n.outputs)), None)
    if producer is None or producer.kind != "model":
        return boxes
    shape = tuple(boxes.shape)
    if (boxes.dtype not in (np.dtype(np.int32), np.dtype(np.float32)) or len(shape) not in (2, 3)
            or shape[-1] != 4 or (len(shape) == 3 and shape[1] < 1)):
        raise PipelineError(f"crop_resize {crop!r}: boxes from model output {boxes.name!r} are (rows, 4) or "
                            f"(rows, K, 4) int32 pixels or float32 fractions (x0, y0, x1, y1), got "
                            f"{boxes.dtype} {shape_text(shape, '-1')}")
    step = f"{crop} boxes"
    if step in pipe._names:
        raise PipelineError(f"crop_resize {crop!r}: the name {step!r} of the step that brings its boxes to "
                            "the host is already used in this pipeline")
    node = _Node(step, None, [boxes], kind="host", fn=None, rows="any", max_rows=max_boxes,
                 boxes_for=(crop, max_boxes))
    pipe._names.add(step)
    pipe._nodes.append(node)
    node.outputs.append(pipe._new_tensor(f"{step}.boxes", boxes.dtype, (-1, 4)))
    return node.outputs[0]


def size_box_steps(nodes, order, tensors, max_batch):
    """Give each step :func:`model_boxes` inserted its max_rows, and its crop
    its max_boxes: the max_boxes asked, or every box the model output can
    carry (its rows at most times K), within one batch crop's regions; and
    its function, the executor's builtin ae_rows_to_boxes (bound when the
    plan is lowered)."""

    by_name = {n.name: n for n in nodes}
    for i in order:
        step = nodes[i]
        if step.boxes_for is None:
            continue
        crop, asked = step.boxes_for
        src = step.inputs[0]
        per_row = src.shape[1] if len(src.shape) == 3 else 1
        domain = tensors[src.index].domain
        most = (max_batch if domain < 0 else nodes[order[domain]].max_rows) * per_row
        if not asked and most > MAX_BOXES:
            raise PipelineError(f"crop_resize {crop!r}: model output {src.name!r} carries up to {most} boxes "
                                f"a request; one batch crop takes {MAX_BOXES} at most: set max_boxes")
        step.max_rows = by_name[crop].image["max_boxes"] = min(asked, most) if asked else most
        name = ctypes.create_string_buffer(crop.encode())   # the step's context: the node its messages name
        step.fn = BuiltinStep("rows_to_boxes", ctypes.addressof(name), keep=name)   # ae_rows_to_boxes


def _picture_of(node, nodes_by_output, what):
    """The image node writing ``node``'s picture input, or a PipelineError."""
    src = nodes_by_output.get(node.inputs[0].index)
    if src is None or src.kind != "image":
        raise PipelineError(f"{node.image['op']} {node.name!r}: {what} must be a picture from jpeg_decode, "
                            f"resize or crop_resize, got {node.inputs[0].name!r}")
    return src


def check_image_node(node, nodes, tensors, byte_inputs, position) -> int:
    """Check image node ``node`` against its inputs; returns its row domain
    (and gives its output that domain)."""
    by_output = {h.index: n for n in nodes for h in n.outputs}
    op, (w, h) = node.image["op"], node.image["size"]
    where = f"{op} {node.name!r}"
    if op == "decode":
        src = node.inputs[0]
        if src.index not in byte_inputs:
            raise PipelineError(f"{where}: decodes a bytes input (pipe.bytes_input), got {src.name!r}")
        domain = -1
    else:
        src = _picture_of(node, by_output, "its input")
        sw, sh = src.image["size"]
        if src.image["op"] != "decode" and not (w <= sw * MAX_UP and h <= sh * MAX_UP and sw <= w * MAX_DOWN
                                                  and sh <= h * MAX_DOWN):
            raise PipelineError(f"{where}: {sw}x{sh} to {w}x{h} is beyond the VPC's scaling (each side "
                                f"1/{MAX_DOWN} to {MAX_UP} times)")
        domain = tensors[node.inputs[0].index].domain
        if domain >= 0:
            raise PipelineError(f"{where}: its picture must carry the request's rows (one picture per "
                                "request), not a host step's")
    if op == "crop_resize":
        boxes = node.inputs[1]
        step = by_output.get(boxes.index)
        if step is None or step.kind != "host" or step.rows != "any":
            raise PipelineError(f"crop_resize {node.name!r}: its boxes must be a model output or an output "
                                f"of a host step with rows=\"any\" (0 to max_rows boxes per request), got "
                                f"{boxes.name!r}")
        if boxes.dtype not in (np.dtype(np.int32), np.dtype(np.float32)) or tuple(boxes.shape[1:]) != (4,):
            raise PipelineError(f"crop_resize {node.name!r}: boxes are (rows, 4) int32 pixels or float32 "
                                f"fractions (x0, y0, x1, y1), got {boxes.dtype} {boxes.shape}")
        # a step model_boxes inserted is sized (again) by size_box_steps once the request's rows are known
        if step.max_rows > node.image["max_boxes"] and node.image["max_boxes"]:
            raise PipelineError(f"crop_resize {node.name!r}: host step {step.name!r} returns up to "
                                f"{step.max_rows} boxes, more than max_boxes={node.image['max_boxes']}")
        if step.max_rows > MAX_BOXES:
            raise PipelineError(f"crop_resize {node.name!r}: host step {step.name!r} returns up to "
                                f"{step.max_rows} boxes; one batch crop takes {MAX_BOXES} at most")
        node.image["max_boxes"] = step.max_rows
        domain = tensors[boxes.index].domain
    tensors[node.outputs[0].index].domain = domain
    return domain


def check_image_readers(nodes, outputs):
    """Pictures go to models with a matching static-AIPP NV12 input, to image
    nodes, or out of the pipeline (resized and cropped pictures only)."""
    pictures = {n.outputs[0].index: n for n in nodes if n.kind == "image"}
    for node in nodes:
        for k, h in enumerate(node.inputs):
            src = pictures.get(h.index)
            if src is None or node.kind == "image":
                continue
            w, hh = src.image["size"]
            if src.image["op"] == "decode" or node.kind != "model":
                raise PipelineError(f"{node.kind} node {node.name!r} reads {h.name!r}, a decoded picture of "
                                    "any size: resize it first" if src.image["op"] == "decode" else
                                    f"host step {node.name!r} reads the picture {h.name!r}: pictures stay on "
                                    "the device (models with AIPP, image nodes)")
            spec = node.model.inputs[k]
            want = (hh * 3 // 2, w, 1)
            if np.dtype(spec.dtype) != np.uint8 or tuple(spec.shape[1:]) != want:
                raise PipelineError(
                    f"model node {node.name!r} input {spec.name!r} reads {src.image['op']} {src.name!r}, an "
                    f"NV12 picture of {w}x{hh}: the input must be a static-AIPP YUV420SP_U8 input of that "
                    f"size (uint8 {want} after the rows), got {np.dtype(spec.dtype)} {tuple(spec.shape)}")
    for name, h in outputs:
        src = pictures.get(h.index)
        if src is not None and src.image["op"] == "decode":
            raise PipelineError(f"output {name!r}: a decoded picture has its JPEG's size and strides; "
                                "output a resized one")


def plan_image(node, k, tensors, streams, domain) -> PlanNode:
    """An image node's plan node at plan position ``k``, on a stream of its own."""
    for h in node.inputs:
        tensors[h.index].readers.append(k)
    out = tensors[node.outputs[0].index]
    out.producer = k
    if node.image["op"] == "crop_resize":
        out.max_rows = max(out.max_rows, node.image["max_boxes"])
    return PlanNode(
        name=node.name, model=None, stream=streams[0], inputs=[h.index for h in node.inputs],
        outputs=[node.outputs[0].index], dyn_index=-1, dyn_offset=0, dyn_size=0, gears=(), static_batch=0,
        streams=tuple(streams), kind="image", domain=domain, image=dict(node.image),
    )
