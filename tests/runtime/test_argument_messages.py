"""DeviceBuffer and HostBuffer arguments refused with a message naming them: a
size no allocation can have, a count or offset outside the buffer (never a
raw OverflowError), and arrays whose bytes are PyObject pointers."""

import numpy as np
import pytest

import ascend_engine as ae


@pytest.mark.parametrize("size", [-1, 0, 2**64])
def test_a_size_out_of_range_is_a_value_error_naming_the_size(dev, size):
    with pytest.raises(ValueError, match=f"DeviceBuffer nbytes must be between 1 and .*, got {size}$"):
        ae.DeviceBuffer(dev, size)


@pytest.mark.parametrize("size", [2.5, "16", True])
def test_a_size_that_is_not_an_integer_is_a_type_error_naming_it(dev, size):
    with pytest.raises(TypeError, match=f"DeviceBuffer nbytes must be a number of bytes \\(an integer\\), "
                                        f"got {size!r}"):
        ae.DeviceBuffer(dev, size)


@pytest.mark.parametrize("size", [-1, 0, 2**64])
def test_a_host_buffer_size_out_of_range_is_a_value_error_naming_it(dev, size):
    with pytest.raises(ValueError, match=f"HostBuffer nbytes must be between 1 and .*, got {size}$"):
        ae.HostBuffer(size, dev)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"nbytes": -1}, ValueError, "copy_to: nbytes must be between 1 and .*, got -1$"),
    ({"nbytes": 2**64}, ValueError, f"copy_to: nbytes must be between 1 and .*, got {2**64}$"),
    ({"nbytes": 1.5}, TypeError, "copy_to: nbytes must be a number of bytes \\(an integer\\), got 1.5"),
    ({"offset": -5}, ValueError, "offset -5 outside the buffer \\(64 bytes\\)"),
    ({"offset": 2**70}, ValueError, f"offset {2**70} outside the buffer"),
    ({"offset": 64}, ValueError, "offset 64 outside the buffer"),
    ({"offset": 1.5}, TypeError, "offset must be an integer, got float"),
])
def test_copy_counts_and_offsets_out_of_range_name_what_was_given(dev, kwargs, error, message):
    with ae.DeviceBuffer(dev, 64) as buf:
        with pytest.raises(error, match=message):
            buf.copy_to(**kwargs)
        if "offset" in kwargs:
            with pytest.raises(error, match=message):
                buf.copy_from(np.zeros(4, np.uint8), **kwargs)
        buf.copy_from(np.arange(64, dtype=np.uint8))
        np.testing.assert_array_equal(buf.copy_to(offset=60), [60, 61, 62, 63])   # the buffer still works
        assert buf.copy_to(nbytes=0).shape == (0,)   # an empty copy is valid (an open dimension of 0)


def test_a_numpy_integer_size_still_allocates(dev):
    with ae.DeviceBuffer(dev, np.int64(64)) as buf:
        assert buf.nbytes == 64


OBJECTS = np.array([object(), "text", 3], dtype=object)


def test_copy_from_refuses_an_object_array(dev):
    with ae.DeviceBuffer(dev, 64) as buf:
        with pytest.raises(TypeError, match="copy_from: src: expected an array of a numeric or bool dtype, "
                                            "got object"):
            buf.copy_from(OBJECTS)
        with pytest.raises(TypeError, match="copy_from: src: .* got \\[\\('a', 'O'\\)\\]"):
            buf.copy_from(np.zeros(2, dtype=[("a", "O")]))


def test_copy_to_refuses_an_object_array_and_an_object_dtype(dev):
    with ae.DeviceBuffer(dev, 64) as buf:
        out = np.empty(8, dtype=object)
        with pytest.raises(TypeError, match="copy_to: out: expected an array of a numeric or bool dtype, "
                                            "got object"):
            buf.copy_to(out)
        assert all(o is None for o in out)   # nothing was written over the pointers
        with pytest.raises(TypeError, match="copy_to: dtype: expected a numeric or bool dtype, got object"):
            buf.copy_to(dtype=object)


def test_numeric_bool_and_plain_buffers_still_copy(dev):
    with ae.DeviceBuffer(dev, 16) as buf:
        data = np.arange(4, dtype=np.float32)
        buf.copy_from(data)
        np.testing.assert_array_equal(buf.copy_to(dtype=np.float32), data)
        flags = np.array([True, False] * 8)
        buf.copy_from(flags)
        np.testing.assert_array_equal(buf.copy_to(np.empty(16, bool)), flags)
        buf.copy_from(bytes(range(16)))
        assert bytes(buf.copy_to()) == bytes(range(16))
