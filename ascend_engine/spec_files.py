"""Reading pipeline spec files (docs/pipeline-spec.md): YAML or JSON into a plain
dict, with a repeated key in one mapping refused instead of the last one winning,
and every failure a :class:`~ascend_engine.errors.SpecError` naming the file.
:mod:`ascend_engine.spec` checks what this reads.
"""

from __future__ import annotations

import json
import os
import sys

from ascend_engine.errors import SpecError

SPEC_SUFFIXES = (".yaml", ".yml", ".json")


def is_spec_path(path) -> bool:
    """True when ``path`` names a spec file by its suffix (.yaml, .yml or .json)."""
    return os.fspath(path).lower().endswith(SPEC_SUFFIXES)


def read(path) -> dict:
    """Read a spec file (JSON for ``.json``, YAML otherwise) into a plain dict."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise SpecError("", f"cannot read the spec file: {exc.strerror or exc}", path) from exc
    except UnicodeDecodeError as exc:
        raise SpecError("", f"not UTF-8 text: byte 0x{exc.object[exc.start]:02x} at offset {exc.start} "
                            "cannot be decoded (a spec file is YAML or JSON in UTF-8)", path) from None
    try:
        return _parse_text(path, text)
    except ValueError as exc:      # e.g. an integer past Python's digit limit
        if isinstance(exc, SpecError):
            raise
        detail = str(exc).split(";")[0]
        if "integer string conversion" in detail:
            detail = f"an integer longer than the {sys.get_int_max_str_digits()} digits Python reads"
        raise SpecError("", f"holds a value that cannot be read: {detail}", path) from None


def _parse_text(path, text):
    if path.lower().endswith(".json"):
        try:
            data = json.loads(text, object_pairs_hook=_unique_json_keys)
        except json.JSONDecodeError as exc:
            raise SpecError("", f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                            path) from exc
        except RecursionError:
            raise SpecError("", "nested too deeply to be a pipeline spec", path) from None
        except _DuplicateKey as exc:
            raise SpecError("", f"the key {exc.key!r} appears twice in one mapping", path) from None
    else:
        import yaml

        try:
            data = yaml.load(text, Loader=_strict_yaml_loader())
        except RecursionError:
            raise SpecError("", "nested too deeply to be a pipeline spec", path) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise SpecError("", f"not valid YAML: {problem}{at}", path) from exc
    return data


class _DuplicateKey(ValueError):
    def __init__(self, key):
        super().__init__(key)
        self.key = key


def _unique_json_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


_LOADER = None


def _strict_yaml_loader():
    """yaml.SafeLoader that refuses a key repeated in one mapping (instead of last-wins)."""
    global _LOADER
    if _LOADER is None:
        import yaml

        class StrictLoader(yaml.SafeLoader):
            def construct_mapping(self, node, deep=False):
                seen = set()
                for key_node, _value_node in node.value:
                    key = self.construct_object(key_node, deep=deep)
                    try:
                        duplicate = key in seen
                    except TypeError:
                        duplicate = False   # unhashable keys fail below with yaml's own message
                    if duplicate:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"the key {key!r} appears twice in one mapping", key_node.start_mark)
                    if not isinstance(key, list | dict):
                        seen.add(key)
                return super().construct_mapping(node, deep=deep)

        _LOADER = StrictLoader
    return _LOADER
