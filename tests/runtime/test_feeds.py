"""One feed check for Model and Engine: the same bad feeds get the same message
from ``model(x=...)`` and from ``engine.run(...)``, naming who takes the inputs."""

import numpy as np
import pytest

import ascend_engine as ae
from ascend_engine import sim
from ascend_engine._feeds import check_feeds, random_feeds, shape_text


@pytest.fixture(scope="module")
def two_input_model(tmp_path_factory):
    g = sim.Graph("feeds")
    a = g.input("a", "float32", (-1, 4))
    b = g.input("b", "float32", (-1, 4))
    g.output("y", g.add(a, b))
    path = tmp_path_factory.mktemp("feeds") / "two.om"
    g.save(str(path), batch_sizes=(1, 2, 4))
    return str(path)


GOOD = np.ones((2, 4), np.float32)
BAD_FEEDS = [
    ({"a": GOOD}, "inputs are ['a', 'b']: missing ['b'], unexpected []"),
    ({"a": GOOD, "b": GOOD, "c": GOOD}, "inputs are ['a', 'b']: missing [], unexpected ['c']"),
    ({"a": GOOD, "b": GOOD.astype(np.float64)},
     "input 'b': expected dtype float32, got float64 (convert with .astype(np.float32))"),
    ({"a": np.ones((2, 5), np.float32), "b": GOOD}, "input 'a': expected shape (batch, 4), got (2, 5)"),
    ({"a": GOOD, "b": np.ones((3, 4), np.float32)}, "input 'b': batch 3 differs from the other inputs' 2"),
    ({"a": GOOD[:0], "b": GOOD[:0]}, "the inputs have no rows"),
]


@pytest.mark.parametrize("feeds, message", BAD_FEEDS)
def test_model_and_engine_reject_bad_feeds_alike(two_input_model, feeds, message):
    with ae.Device(0) as dev:
        model = ae.Model.load(two_input_model, dev)
        pipe = ae.Pipeline(device=0)
        a, b = pipe.input("a", "float32", (-1, 4)), pipe.input("b", "float32", (-1, 4))
        pipe.output("y", pipe.model(model, a, b))
        with pipe.compile(depth=2) as engine:
            with pytest.raises(ValueError) as by_model:
                model(**feeds)
            with pytest.raises(ValueError) as by_engine:
                engine.run(feeds)
    assert str(by_model.value).endswith(message)
    assert str(by_engine.value).endswith(message)
    if message.startswith("inputs are"):
        assert str(by_model.value) == f"model {two_input_model!r} {message}"
        assert str(by_engine.value) == f"pipeline {message}"


def test_static_batch_and_dynamic_dimensions():
    specs = [("x", np.dtype(np.float32), (4, 3))]
    with pytest.raises(ValueError, match=r"^input 'x': the model 'm' is static with batch 4, got 2$"):
        check_feeds({"x": np.zeros((2, 3), np.float32)}, specs, "model 'm'")
    arrays, rows = check_feeds({"x": np.zeros((4, 3), np.float32)}, specs, "model 'm'")
    assert rows == 4 and arrays[0].shape == (4, 3)
    image = [("img", np.dtype(np.uint8), (1, 3, -1, -1))]
    with pytest.raises(ValueError, match=r"^input 'img': expected shape \(1, 3, -1, -1\) \(-1: dynamic\), "
                                         r"got \(1, 3, 0, 8\)$"):
        check_feeds({"img": np.zeros((1, 3, 0, 8), np.uint8)}, image, "model 'm'", batched=False)
    arrays, rows = check_feeds({"img": np.zeros((1, 3, 5, 8), np.uint8)[..., ::2]}, image, "m", batched=False)
    assert rows is None and arrays[0].flags.c_contiguous and arrays[0].shape == (1, 3, 5, 4)
    with pytest.raises(TypeError, match="feeds must be a dict of input name -> array, got list"):
        check_feeds([GOOD], specs, "pipeline")


def test_shape_text_and_random_feeds():
    assert shape_text((-1, 16)) == "(batch, 16)"
    assert shape_text((-1,)) == "(batch,)"
    assert shape_text((1, 3, -1, -1), "-1") == "(1, 3, -1, -1)"
    specs = [("f", np.float16, (2,)), ("i", np.int8, ()), ("b", np.bool_, (3,))]
    one, two = random_feeds(specs, 5, count=2, seed=7)
    assert one["f"].shape == (5, 2) and one["f"].dtype == np.float16
    assert one["i"].shape == (5,) and 0 <= one["i"].min() and one["i"].max() <= 100
    assert set(np.unique(one["b"])) <= {False, True}
    assert not np.array_equal(one["f"], two["f"])
    again = random_feeds(specs, 5, count=2, seed=7)
    assert all(np.array_equal(again[0][k], one[k]) for k in one)
