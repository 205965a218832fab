"""The AscendCL simulator's Python side: the model builder and its numpy reference.

``Graph`` builds simulator model files (``docs/sim-model-format.md``) that the
simulator's ``aclmdlLoadFromFile`` runs; ``reference`` evaluates a graph with
numpy.  Pure Python: importable without the native extensions.
"""

from .graph import Graph, GraphError, Tensor
from .graph_reference import reference

__all__ = ["Graph", "GraphError", "Tensor", "reference"]
