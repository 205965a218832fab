# cython: language_level=3
"""Models: load a model file, describe its tensors, execute it.

This module runs models: each dynamic kind's strategy object and the
executions; ``ascend_engine._model_base`` (which it cimports) loads and
describes them and holds the Model class, re-exported here.

``Model.load(path, device=0)`` loads with ``aclmdlLoadFromFile`` (or, with
``weights=``, ``aclmdlLoadFromFileWithMem`` on a caller-placed weight
allocation; ``Model.load_instances`` loads k copies sharing one) and reads
every tensor's name, dtype, dims and size from the model's descriptor, and
its dynamic mechanism: batch gears, image-size (HW) gears, dims gears or
shape ranges.  ``model(x=array)`` runs once synchronously: it picks the gear
from the arrays' shapes (padding up to it and slicing the outputs back), or
describes a shape-range model's inputs; ``execute_async`` queues an execution
on device buffers (at a batch, a gear or input shapes).
"""

import numpy as np

from libc.stdint cimport int64_t, uint32_t, uint64_t
from libc.string cimport memset

from ascend_engine._acl cimport *
# api(), check(), the checked_<name> / require_<name> AscendCL wrappers, and the
# runtime's classes and handle accessors (see ascend_engine/_runtime.pxd).
from ascend_engine._runtime cimport *
from ascend_engine._memory cimport DeviceBuffer, buffer_ptr
from ascend_engine._model_base cimport (Model, _DatasetPair, _Kind, _async_pair, _describe_dims, _describe_ranges,
                                        _make_pair, _staging_pair, register_kind)

from ascend_engine import errors as _errors
from ascend_engine._feeds import check_feeds, shape_text
from ascend_engine.shapes import holding_gear, pad_to as _pad_to

from ascend_engine._model_base import ASYNC_DATASETS_CACHED, TensorSpec  # noqa: F401  (re-exported)

# Each include is one job (docs/executor.md, "Where each job lives").
include "_model_kinds.pxi"
include "_model_execute.pxi"


register_kind("static", _StaticKind)
register_kind("batch", _BatchKind)
register_kind("hw", _HwKind)
register_kind("dims", _DimsKind)
register_kind("range", _RangeKind)



# Model is _model_base's, cimported above; ascend_engine._model keeps it as a public name too.
globals()["Model"] = Model
