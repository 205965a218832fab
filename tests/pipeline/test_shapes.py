"""The one gear rule and the one padding of ascend_engine/shapes.py, on plain data.

Model.gear_for (batch gears), Model.gear_shapes (image-size and dims gears)
and the engine's per-request choice all call these (tests/model and
tests/pipeline/test_dynamic_pipeline.py check them through their callers).
"""

import numpy as np

from ascend_engine.shapes import holding_gear, pad_to


def batch(gears):
    return [(g, ((g,),)) for g in gears]


def test_a_batch_gear_is_the_smallest_holding_the_rows():
    assert [holding_gear(batch((1, 2, 4, 8)), ((rows,),))[0] for rows in (0, 1, 2, 3, 4, 5, 8)] == \
        [1, 1, 2, 4, 4, 8, 8]
    assert holding_gear(batch((1, 2, 4, 8)), ((9,),)) is None


def test_an_image_size_is_the_gear_with_the_fewest_elements_ties_to_the_smaller_gear():
    gears = [((h, w), ((1, 3, h, w),)) for h, w in ((64, 32), (32, 64), (48, 48), (128, 128))]
    assert holding_gear(gears, [(1, 3, 30, 30)])[0] == (32, 64)    # 2048 elements, as (64, 32): the smaller
    assert holding_gear(gears, [(1, 3, 40, 40)])[0] == (48, 48)
    assert holding_gear(gears, [(1, 3, 40, 60)])[0] == (128, 128)
    assert holding_gear(gears, [(1, 3, 200, 8)]) is None


def test_dims_gears_count_every_input_and_tie_to_the_first_listed():
    gears = [(0, ((4, 16), (4,))), (1, ((8, 8), (4,))), (2, ((2, 32), (2,)))]
    assert holding_gear(gears, [(3, 8), (3,)])[0] == 0    # 68 elements each for 0 and 1: the first
    assert holding_gear(gears, [(2, 8), (2,)])[0] == 2    # 66
    assert holding_gear(gears, [(5, 8), (4,)])[0] == 1
    assert holding_gear(gears, [(2, 8, 1), (2,)]) is None   # another rank: no gear holds it


def test_chunked_rows_are_free_only_the_trailing_dimensions_choose():
    gears = [(0, ((2, 16),)), (1, ((2, 32),))]
    assert holding_gear(gears, [(7, 20)]) is None
    assert holding_gear(gears, [(7, 20)], chunked=True)[0] == 1


def test_pad_to_pads_after_the_data_and_returns_a_contiguous_array():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = pad_to(a, (3, 4))
    assert out.dtype == a.dtype and out.shape == (3, 4)
    np.testing.assert_array_equal(out[:2, :3], a)
    assert not out[2:].any() and not out[:, 3:].any()
    assert pad_to(a, (2, 3)) is a
    view = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    same = pad_to(view, (3, 2))
    assert same.flags.c_contiguous and np.array_equal(same, view)
