"""Hostile or careless spec files: each gets a SpecError naming what is wrong,
never a crash, a RecursionError, a numpy error or minutes of work."""

import json

import pytest

from ascend_engine import sim, spec
from ascend_engine.toposort import CycleError, topological_order


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    g = sim.Graph("one")
    g.output("y", g.relu(g.input("x", "float32", (-1, 4))))
    path = tmp_path_factory.mktemp("hostile") / "one.om"
    g.save(str(path), batch_sizes=(1, 2))
    return path


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def spec_text(model_file, extra_compile="", shape="[-1, 4]", dtype="float32"):
    return (f"inputs: {{x: {{dtype: {dtype}, shape: {shape}}}}}\n"
            f"models: [{{name: m, path: {model_file}, inputs: [x]}}]\n"
            f"outputs: {{y: m}}\n" + (f"compile: {{{extra_compile}}}\n" if extra_compile else ""))


def test_error_messages_never_walk_a_huge_value():
    """An alias bomb's value is billions of elements: the message looks at a few."""
    seen = []

    class Loud:
        def __repr__(self):
            seen.append(1)
            return "loud"

    text = spec._kind([[Loud() for _ in range(300)] for _ in range(300)])
    assert text.startswith("list [[loud, loud, loud, loud, ...")
    assert len(text) <= 45 and len(seen) <= 16   # 4 x 4, of 90 000


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path, model_file):
    levels = ["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for k in range(1, 9):
        prev = chr(ord("a") + k - 1)
        levels.append(f"{chr(ord('a') + k)}: &{chr(ord('a') + k)} [{', '.join([f'*{prev}'] * 9)}]")
    bomb = "bomb:\n" + "\n".join("  " + line for line in levels) + "\ninputs: *i\nmodels: []\noutputs: {}\n"
    assert len(bomb) < 600
    with pytest.raises(spec.SpecError) as info:
        spec.load(str(write(tmp_path, "bomb.yaml", bomb)))
    assert info.value.key == "bomb" and "unknown key" in info.value.detail
    doc = spec.read(str(write(tmp_path, "bomb2.yaml", bomb.replace("bomb:\n", "x_:\n"))))
    doc.pop("x_")
    with pytest.raises(spec.SpecError) as info:
        spec.parse(doc, base_dir=str(tmp_path))
    assert info.value.key == "inputs" and len(str(info.value)) < 300


@pytest.mark.parametrize("name, text", [
    ("dup.yaml", "inputs: {x: {dtype: float32, shape: [-1, 4]}}\ninputs: {}\nmodels: []\noutputs: {}\n"),
    ("dup.json", '{"inputs": {}, "models": [], "outputs": {"y": "m", "y": "n"}}'),
])
def test_a_repeated_key_is_an_error_not_last_wins(tmp_path, name, text):
    with pytest.raises(spec.SpecError, match="the key '(inputs|y)' appears twice"):
        spec.read(str(write(tmp_path, name, text)))


@pytest.mark.parametrize("name, text", [("deep.yaml", "a: " + "[" * 1500 + "]" * 1500 + "\n"),
                                        ("deep.json", '{"a": ' + "[" * 100000 + "]" * 100000 + "}")])
def test_deep_nesting_is_an_error(tmp_path, name, text):
    with pytest.raises(spec.SpecError, match="nested too deeply"):
        spec.read(str(write(tmp_path, name, text)))


def test_a_chain_of_thousands_of_models_sorts(tmp_path, model_file):
    n = 3000
    models = [{"name": f"m{k}", "path": str(model_file), "inputs": ["x" if k == 0 else f"m{k - 1}"]}
              for k in reversed(range(n))]   # listed last-first: the sort must reorder all
    doc = {"inputs": {"x": {"dtype": "float32", "shape": [-1, 4]}}, "models": models,
           "outputs": {"y": f"m{n - 1}"}}
    parsed = spec.parse(json.loads(json.dumps(doc)), base_dir=str(tmp_path))
    assert [m.name for m in parsed.models] == [f"m{k}" for k in range(n)]


def test_the_topological_sort_keeps_listed_order_and_names_a_cycle():
    assert topological_order([[], [], [0, 1], [1]]) == [0, 1, 2, 3]
    assert topological_order([[1], [2], []]) == [2, 1, 0]
    assert topological_order([[k + 1] for k in range(9999)] + [[]])[:2] == [9999, 9998]
    with pytest.raises(CycleError) as info:
        topological_order([[], [2], [3], [1]])
    assert info.value.cycle == [1, 2, 3, 1]


@pytest.mark.parametrize("kwargs, key, message", [
    ({"dtype": "'1l toat32'"}, "inputs.x.dtype",
     "expected a dtype name such as 'float32' or 'int8', got '1l toat32'"),
    ({"shape": "[-1, 4611686018427387904]"}, "inputs.x.shape",
     "dimensions from 1 to 2147483647"),
    ({"extra_compile": "depth: 100000000000"}, "compile.depth",
     "expected a depth of at most 4096, got 100000000000"),
    ({"extra_compile": "timeout: .nan"}, "compile.timeout", "got float nan"),
    ({"extra_compile": "timeout: .inf"}, "compile.timeout", "got float inf"),
    ({"extra_compile": "timeout: 0.0001"}, "compile.timeout", "from 0.001 to 2147483"),
    ({"extra_compile": "timeout: '5'"}, "compile.timeout", "got str '5'"),
])
def test_values_out_of_range_name_key_value_and_limit(tmp_path, model_file, kwargs, key, message):
    with pytest.raises(spec.SpecError) as info:
        spec.load(str(write(tmp_path, "s.yaml", spec_text(model_file, **kwargs))))
    assert info.value.key == key
    assert message in info.value.detail


def test_a_spec_that_is_not_utf8_names_the_file_and_the_byte(tmp_path, model_file):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(spec_text(model_file).encode() + b"# caf\xe9\n")
    with pytest.raises(spec.SpecError) as info:
        spec.read(path)
    offset = len(spec_text(model_file).encode()) + len("# caf")
    assert str(info.value) == (f"{path}: not UTF-8 text: byte 0xe9 at offset {offset} cannot be decoded "
                               "(a spec file is YAML or JSON in UTF-8)")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_an_integer_of_thousands_of_digits_is_a_spec_error(tmp_path, model_file, suffix):
    digits = "9" * 5000
    text = f"device: {digits}\n" if suffix == ".yaml" else '{"device": ' + digits + "}"
    path = write(tmp_path, "long" + suffix, text)
    with pytest.raises(spec.SpecError) as info:
        spec.read(path)
    assert str(info.value) == (f"{path}: holds a value that cannot be read: an integer longer than the "
                               "4300 digits Python reads")
