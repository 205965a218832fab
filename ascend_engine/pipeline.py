"""The names ``ascend_engine.pipeline`` has always offered, re-exported from their homes.

Nothing in this repository imports this module; it stays for users' code.

* :mod:`ascend_engine.planner.builder` -- ``Pipeline``, ``TensorHandle``,
  ``NativeStep``, ``MAX_STEP_ROWS``, ``ROWS_CHOICES``;
* :mod:`ascend_engine.planner.plan` -- ``Plan``, ``PlanNode``, ``PlanTensor``;
* :mod:`ascend_engine.planner.memory` -- ``ALIGN``, ``PADDING``,
  ``POOL_HEADROOM``, ``carve``;
* :mod:`ascend_engine.planner.models` -- ``ModelDescription``;
* :mod:`ascend_engine.shapes` -- ``RequestShape``, ``ShapedRequests``,
  ``RequestWalk``, ``pad_to``;
* :mod:`ascend_engine.errors` -- ``PipelineError``.
"""

from ascend_engine.errors import PipelineError
from ascend_engine.planner.builder import MAX_STEP_ROWS, ROWS_CHOICES, NativeStep, Pipeline, TensorHandle
from ascend_engine.planner.memory import ALIGN, PADDING, POOL_HEADROOM, carve
from ascend_engine.planner.models import ModelDescription
from ascend_engine.planner.plan import Plan, PlanNode, PlanTensor
from ascend_engine.shapes import RequestShape, RequestWalk, ShapedRequests, pad_to

__all__ = [
    "ALIGN",
    "MAX_STEP_ROWS",
    "PADDING",
    "POOL_HEADROOM",
    "ROWS_CHOICES",
    "ModelDescription",
    "NativeStep",
    "Pipeline",
    "PipelineError",
    "Plan",
    "PlanNode",
    "PlanTensor",
    "RequestShape",
    "RequestWalk",
    "ShapedRequests",
    "TensorHandle",
    "carve",
    "pad_to",
]
