"""A pyACL program for models with gears: dynamic batch (acl.mdl.get_dynamic_batch,
set_dynamic_batch_size) or dynamic image size (get_dynamic_hw,
set_dynamic_hw_size), the gear chosen through the input named
"ascend_mbatch_shape_data"; the output shape read back with
acl.mdl.get_cur_output_dims.

    python dynamic.py MODEL.om batch|hw INPUT.npy OUT.npy
"""

import sys

import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_FLOAT = 0
NPY_FLOAT32 = 11
DYNAMIC_INPUT = "ascend_mbatch_shape_data"


def check_ret(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed ret={ret}: {acl.get_recent_err_msg()}")


def main(model_path, mode, x):
    check_ret("acl.init", acl.init())
    check_ret("acl.rt.set_device", acl.rt.set_device(0))
    context, ret = acl.rt.create_context(0)
    check_ret("acl.rt.create_context", ret)
    model_id, ret = acl.mdl.load_from_file(model_path)
    check_ret("acl.mdl.load_from_file", ret)
    desc = acl.mdl.create_desc()
    check_ret("acl.mdl.get_desc", acl.mdl.get_desc(desc, model_id))
    assert acl.mdl.get_input_data_type(desc, 0) == ACL_FLOAT
    index, ret = acl.mdl.get_input_index_by_name(desc, DYNAMIC_INPUT)
    check_ret("acl.mdl.get_input_index_by_name", ret)

    inputs, outputs, pointers = acl.mdl.create_dataset(), acl.mdl.create_dataset(), []
    sides = ((inputs, acl.mdl.get_num_inputs(desc), acl.mdl.get_input_size_by_index),
             (outputs, acl.mdl.get_num_outputs(desc), acl.mdl.get_output_size_by_index))
    for dataset, count, size_of in sides:
        for i in range(count):
            size = size_of(desc, i)
            ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
            check_ret("acl.rt.malloc", ret)
            pointers.append(ptr)
            _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(ptr, size))
            check_ret("acl.mdl.add_dataset_buffer", ret)

    if mode == "batch":
        batch, ret = acl.mdl.get_dynamic_batch(desc)
        check_ret("acl.mdl.get_dynamic_batch", ret)
        assert x.shape[0] in batch["batch"], (x.shape, batch)
        check_ret("acl.mdl.set_dynamic_batch_size",
                  acl.mdl.set_dynamic_batch_size(model_id, inputs, index, x.shape[0]))
    else:
        hw, ret = acl.mdl.get_dynamic_hw(desc, -1)
        check_ret("acl.mdl.get_dynamic_hw", ret)
        assert list(x.shape[2:]) in hw["hw"], (x.shape, hw)
        check_ret("acl.mdl.set_dynamic_hw_size",
                  acl.mdl.set_dynamic_hw_size(model_id, inputs, index, x.shape[2], x.shape[3]))

    first = acl.mdl.get_dataset_buffer(inputs, 0)
    data = x.tobytes()
    ret = acl.rt.memcpy(acl.get_data_buffer_addr(first), acl.get_data_buffer_size(first),
                        acl.util.bytes_to_ptr(data), len(data), ACL_MEMCPY_HOST_TO_DEVICE)
    check_ret("acl.rt.memcpy", ret)
    check_ret("acl.mdl.execute", acl.mdl.execute(model_id, inputs, outputs))

    dims, ret = acl.mdl.get_cur_output_dims(desc, 0)
    check_ret("acl.mdl.get_cur_output_dims", ret)
    shape = tuple(dims["dims"][: dims["dimCount"]])
    nbytes = int(np.prod(shape)) * 4
    host, ret = acl.rt.malloc_host(nbytes)
    check_ret("acl.rt.malloc_host", ret)
    out_buf = acl.mdl.get_dataset_buffer(outputs, 0)
    check_ret("acl.rt.memcpy", acl.rt.memcpy(host, nbytes, acl.get_data_buffer_addr(out_buf), nbytes,
                                             ACL_MEMCPY_DEVICE_TO_HOST))
    result = acl.util.ptr_to_numpy(host, shape, NPY_FLOAT32).copy()
    check_ret("acl.rt.free_host", acl.rt.free_host(host))

    for dataset in (inputs, outputs):
        for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
            buf = acl.mdl.get_dataset_buffer(dataset, i)
            check_ret("acl.destroy_data_buffer", acl.destroy_data_buffer(buf))
        check_ret("acl.mdl.destroy_dataset", acl.mdl.destroy_dataset(dataset))
    for ptr in pointers:
        check_ret("acl.rt.free", acl.rt.free(ptr))
    check_ret("acl.mdl.unload", acl.mdl.unload(model_id))
    check_ret("acl.mdl.destroy_desc", acl.mdl.destroy_desc(desc))
    check_ret("acl.rt.destroy_context", acl.rt.destroy_context(context))
    check_ret("acl.rt.reset_device", acl.rt.reset_device(0))
    check_ret("acl.finalize", acl.finalize())
    return result


if __name__ == "__main__":
    out = main(sys.argv[1], sys.argv[2], np.ascontiguousarray(np.load(sys.argv[3]), np.float32))
    np.save(sys.argv[4], out)
    print("output", out.shape)
