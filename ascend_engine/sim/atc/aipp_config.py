"""ATC's AIPP configuration file (``--insert_op_conf=aipp.cfg``).

The file is prototxt text: one ``aipp_op { field: value ... }`` block per
model input that gets AIPP, ``#`` comments, fields separated by white space
(one per line or several on a line).  :func:`parse` returns each block's
fields by the input they apply to (``related_input_rank``, default 0);
:func:`apply` checks them against the ONNX model's inputs with the validator
hand-built models use too (``ascend_engine/sim/aipp.py``).  Problems raise
:class:`AtcError` in ATC's words, naming the file, the line and the rule.
"""

from __future__ import annotations

import re

from ascend_engine.errors import AippError

from .. import aipp
from . import flags

__all__ = ["parse", "apply"]

MAX_CONF_BYTES = 1 << 20   # an AIPP configuration is a few hundred bytes: a larger file is refused

_TOKEN = re.compile(r'[{}:]|"[^"]*"|[^\s{}:#"]+')
_INT = re.compile(r"[+-]?\d+$")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def _invalid(path, reason):
    return flags.invalid("insert_op_conf", path, reason)


def _tokens(text):
    """(token, line number) pairs, ``#`` comments dropped."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        out.extend((tok.strip('"'), n) for tok in _TOKEN.findall(line.split("#", 1)[0]))
    return out


def _scalar(word):
    if _INT.match(word):
        return int(word)
    if _FLOAT.match(word):
        return float(word)
    return word


def parse(path, text=None):
    """``{related_input_rank: {field: value}}`` of the file at ``path`` (or of ``text``)."""
    if text is None:
        raw = flags.read_file("insert_op_conf", path, MAX_CONF_BYTES, "the AIPP configuration file")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _invalid(path, f"cannot read the AIPP configuration file: {exc}") from None
    toks = _tokens(text)
    blocks, i = {}, 0
    while i < len(toks):
        word, line = toks[i]
        if word != "aipp_op" or i + 1 >= len(toks) or toks[i + 1][0] != "{":
            raise _invalid(path, f"line {line}: expected 'aipp_op {{', got {word!r}")
        i += 2
        fields = {}
        while True:
            if i >= len(toks):
                raise _invalid(path, f"line {line}: the aipp_op block opened here is not closed with '}}'")
            key, kline = toks[i]
            if key == "}":
                i += 1
                break
            if i + 2 >= len(toks) or toks[i + 1][0] != ":" or toks[i + 2][0] in "{}:":
                raise _invalid(path, f"line {kline}: expected 'field: value' after {key!r}")
            if key not in aipp.FIELDS:
                raise _invalid(path, f"line {kline}: unknown aipp_op field {key!r}")
            if key in fields:
                raise _invalid(path, f"line {kline}: the parameter {key} can not be configured repeatedly")
            fields[key] = _scalar(toks[i + 2][0])
            i += 3
        rank = fields.get("related_input_rank", 0)
        if not isinstance(rank, int) or rank < 0:
            raise _invalid(path, f"line {line}: related_input_rank must be an input index >= 0, got {rank!r}")
        if rank in blocks:
            raise _invalid(path, f"line {line}: two aipp_op blocks for related_input_rank {rank}")
        blocks[rank] = fields
    if not blocks:
        raise _invalid(path, "the file has no aipp_op block")
    return blocks


def apply(path, specs):
    """The resolved settings ``{input index: settings}`` of the file for the model inputs ``specs``.

    ``specs``: the converted model's inputs (``IoSpec`` with name, dtype,
    format, dims; a dimension below 0 is dynamic).
    """
    out = {}
    for rank, fields in parse(path).items():
        if rank >= len(specs):
            raise _invalid(path, f"related_input_rank {rank}: the model has {len(specs)} inputs")
        s = specs[rank]
        shape = tuple("dynamic" if d < 0 else d for d in s.dims)
        try:
            out[rank] = aipp.resolve(fields, s.name, shape, s.format, s.dtype)
        except AippError as exc:
            raise _invalid(path, str(exc)) from None
    return out
