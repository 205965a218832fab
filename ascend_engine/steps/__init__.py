"""Native steps between models (DESIGN.md section 14; docs/executor.md, "Native steps").

Box decoding, NMS, top-k / argmax / softmax, CTC greedy decoding and host
crops, written in C (``csrc/``, one file per step) and run on the engine's
host-step workers without the GIL.  Add them with the Pipeline's methods
(``pipe.decode_boxes``, ``pipe.nms``, ``pipe.topk``, ``pipe.argmax``,
``pipe.softmax``, ``pipe.ctc_greedy``, ``pipe.crop_resize_host``,
``pipe.warp_affine_host``) or a spec file's ``host:`` entries with
``step:``.  :mod:`ascend_engine.steps.reference` holds their numpy
references; :func:`ctc_text` turns CTC labels into strings.
:mod:`ascend_engine.steps.ocr` holds DB text-detection post-processing (docs/executor.md,
"DB text boxes"), its extension ``_ocr`` beside ``_native``.
"""

from ascend_engine.steps.reference import ctc_text

__all__ = ["ctc_text"]
