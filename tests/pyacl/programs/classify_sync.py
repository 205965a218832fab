"""A pyACL classification program, synchronous (written from pyACL's documented
API, as the official Python samples are): load a model, copy each image in,
aclmdlExecute, copy the probabilities out.

    python classify_sync.py MODEL.om IMAGES.npy OUT.npy [DEVICE]
"""

import sys

import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_NORMAL_ONLY = 2
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2


def check_ret(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed ret={ret}: {acl.get_recent_err_msg()}")


class Net:
    def __init__(self, device_id, model_path):
        self.device_id = device_id
        check_ret("acl.init", acl.init())
        check_ret("acl.rt.set_device", acl.rt.set_device(device_id))
        self.context, ret = acl.rt.create_context(device_id)
        check_ret("acl.rt.create_context", ret)
        self.model_id, ret = acl.mdl.load_from_file(model_path)
        check_ret("acl.mdl.load_from_file", ret)
        self.model_desc = acl.mdl.create_desc()
        check_ret("acl.mdl.get_desc", acl.mdl.get_desc(self.model_desc, self.model_id))
        self.input = self._dataset(acl.mdl.get_num_inputs(self.model_desc), acl.mdl.get_input_size_by_index)
        self.output = self._dataset(acl.mdl.get_num_outputs(self.model_desc),
                                    acl.mdl.get_output_size_by_index)

    def _dataset(self, count, size_of):
        dataset = acl.mdl.create_dataset()
        for i in range(count):
            size = size_of(self.model_desc, i)
            ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_NORMAL_ONLY)
            check_ret("acl.rt.malloc", ret)
            buf = acl.create_data_buffer(ptr, size)
            _, ret = acl.mdl.add_dataset_buffer(dataset, buf)
            check_ret("acl.mdl.add_dataset_buffer", ret)
        return dataset

    def run(self, image):
        buf = acl.mdl.get_dataset_buffer(self.input, 0)
        data = image.tobytes()
        ret = acl.rt.memcpy(acl.get_data_buffer_addr(buf), acl.get_data_buffer_size_v2(buf),
                            acl.util.bytes_to_ptr(data), len(data), ACL_MEMCPY_HOST_TO_DEVICE)
        check_ret("acl.rt.memcpy", ret)
        check_ret("acl.mdl.execute", acl.mdl.execute(self.model_id, self.input, self.output))
        out = acl.mdl.get_dataset_buffer(self.output, 0)
        size = acl.get_data_buffer_size_v2(out)
        host, ret = acl.rt.malloc_host(size)
        check_ret("acl.rt.malloc_host", ret)
        check_ret("acl.rt.memcpy", acl.rt.memcpy(host, size, acl.get_data_buffer_addr(out), size,
                                                 ACL_MEMCPY_DEVICE_TO_HOST))
        dims, ret = acl.mdl.get_output_dims(self.model_desc, 0)
        check_ret("acl.mdl.get_output_dims", ret)
        result = np.frombuffer(acl.util.ptr_to_bytes(host, size), np.float32).reshape(dims["dims"])
        check_ret("acl.rt.free_host", acl.rt.free_host(host))
        return result

    def release(self):
        for dataset in (self.input, self.output):
            for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
                buf = acl.mdl.get_dataset_buffer(dataset, i)
                check_ret("acl.rt.free", acl.rt.free(acl.get_data_buffer_addr(buf)))
                check_ret("acl.destroy_data_buffer", acl.destroy_data_buffer(buf))
            check_ret("acl.mdl.destroy_dataset", acl.mdl.destroy_dataset(dataset))
        check_ret("acl.mdl.unload", acl.mdl.unload(self.model_id))
        check_ret("acl.mdl.destroy_desc", acl.mdl.destroy_desc(self.model_desc))
        check_ret("acl.rt.destroy_context", acl.rt.destroy_context(self.context))
        check_ret("acl.rt.reset_device", acl.rt.reset_device(self.device_id))
        check_ret("acl.finalize", acl.finalize())


if __name__ == "__main__":
    model, images, out = sys.argv[1:4]
    net = Net(int(sys.argv[4]) if len(sys.argv) > 4 else 0, model)
    results = [net.run(np.ascontiguousarray(image[None])) for image in np.load(images)]
    net.release()
    np.save(out, np.concatenate(results))
    print("classified", len(results))
