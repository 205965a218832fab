"""``import acl`` for pyACL programs on the simulator: this folder is put on
PYTHONPATH by ``eval "$(ascend-engine sim env)"`` (never installed as a
top-level module: the name ``acl`` on the package index is another project's).
It makes ``acl`` (and ``acl.rt``, ``acl.mdl``...) the module
``ascend_engine.acl``, pyACL's API over the project's AscendCL table
(docs/pyacl.md)."""

import sys

import ascend_engine.acl as _acl

for _name in _acl.NAMESPACES:
    sys.modules[f"{__name__}.{_name}"] = getattr(_acl, _name)
sys.modules[__name__] = _acl
