"""What the graph builder, the model file writer and the numpy reference share.

The dtype and format codes and the limits of the model file
(``docs/sim-model-format.md``), the tensor kinds, :class:`GraphError`, and the
helpers that read and print shapes with dynamic dimensions.  Used by
``graph.py``, ``graph_file.py`` and ``graph_reference.py``.
"""

__all__ = ["GraphError"]

MAX_RANK = 8
MAX_OP_INPUTS = 16
MAX_INTS = 8
MAX_NAME = 127

# aclDataType values
_DTYPES = {
    "float32": 0,
    "float16": 1,
    "int32": 3,
    "uint8": 4,
    "int64": 9,
}
# aclFormat values
_FORMATS = {"NCHW": 0, "NHWC": 1, "ND": 2}

KIND_INPUT, KIND_CONST, KIND_RESULT = 0, 1, 2


class GraphError(ValueError):
    """A graph that cannot be built or saved; the message names the op and what was expected."""


def _is_sym(d):
    """A dynamic dimension: the batch (-1) or a named one (a str)."""
    return isinstance(d, str) or d == -1


def _shape_str(shape):
    return (
        "("
        + ", ".join("batch" if d == -1 else str(d) for d in shape)
        + ("," if len(shape) == 1 else "")
        + ")"
    )
