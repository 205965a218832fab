"""A pyACL classification program with asynchronous execution and host
callbacks: every image runs with acl.mdl.execute_async on one stream; a
callback launched after each copies its probabilities out, on a thread that
acl.rt.process_report serves (acl.util.start_thread + acl.rt.subscribe_report).

    python classify_async.py MODEL.om IMAGES.npy OUT.npy
"""

import sys

import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
ACL_CALLBACK_BLOCK = 1
# CANN 9.1 answers 107012 / 507012; the API reference's older codes 100035 / 100036 are kept for
# releases that still return them
ACL_ERROR_RT_THREAD_SUBSCRIBE = 107012
ACL_ERROR_RT_REPORT_TIMEOUT = 507012
ACL_ERROR_THREAD_NOT_SUBSCRIBE = 100035
ACL_ERROR_WAIT_CALLBACK_TIMEOUT = 100036


def check_ret(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed ret={ret}: {acl.get_recent_err_msg()}")


class AsyncNet:
    def __init__(self, model_path):
        check_ret("acl.init", acl.init())
        check_ret("acl.rt.set_device", acl.rt.set_device(0))
        self.context, ret = acl.rt.create_context(0)
        check_ret("acl.rt.create_context", ret)
        self.stream, ret = acl.rt.create_stream()
        check_ret("acl.rt.create_stream", ret)
        self.model_id, ret = acl.mdl.load_from_file(model_path)
        check_ret("acl.mdl.load_from_file", ret)
        self.desc = acl.mdl.create_desc()
        check_ret("acl.mdl.get_desc", acl.mdl.get_desc(self.desc, self.model_id))
        self.results = {}
        self.callback_threads = set()
        self.exit_flag = False

    def _buffer(self, dataset, size):
        ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
        check_ret("acl.rt.malloc", ret)
        _, ret = acl.mdl.add_dataset_buffer(dataset, acl.create_data_buffer(ptr, size))
        check_ret("acl.mdl.add_dataset_buffer", ret)
        return ptr

    def _process_callback(self, args_list):
        context, timeout = args_list
        check_ret("acl.rt.set_context", acl.rt.set_context(context))
        while True:
            # not yet subscribed (the thread starts before subscribe_report), or nothing due
            ret = acl.rt.process_report(timeout)
            if ret not in (ACL_SUCCESS, ACL_ERROR_RT_THREAD_SUBSCRIBE, ACL_ERROR_RT_REPORT_TIMEOUT,
                           ACL_ERROR_THREAD_NOT_SUBSCRIBE, ACL_ERROR_WAIT_CALLBACK_TIMEOUT):
                raise RuntimeError(f"acl.rt.process_report failed ret={ret}")
            if self.exit_flag:
                break

    def _callback(self, args):
        index, output, size = args
        host = np.zeros(size // 4, np.float32)
        check_ret("acl.rt.memcpy", acl.rt.memcpy(acl.util.numpy_to_ptr(host), size, output, size,
                                                 ACL_MEMCPY_DEVICE_TO_HOST))
        self.results[index] = host
        self.callback_threads.add(__import__("threading").get_ident())

    def run(self, images):
        tid, ret = acl.util.start_thread(self._process_callback, [self.context, 20])
        check_ret("acl.util.start_thread", ret)
        check_ret("acl.rt.subscribe_report", acl.rt.subscribe_report(tid, self.stream))
        in_size = acl.mdl.get_input_size_by_index(self.desc, 0)
        out_size = acl.mdl.get_output_size_by_index(self.desc, 0)
        keep = []
        for i, image in enumerate(images):
            data = np.ascontiguousarray(image[None])
            inputs, outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
            dev_in = self._buffer(inputs, in_size)
            dev_out = self._buffer(outputs, out_size)
            check_ret("acl.rt.memcpy_async", acl.rt.memcpy_async(
                dev_in, in_size, acl.util.numpy_to_ptr(data), data.nbytes, ACL_MEMCPY_HOST_TO_DEVICE,
                self.stream))
            check_ret("acl.mdl.execute_async", acl.mdl.execute_async(self.model_id, inputs, outputs,
                                                                     self.stream))
            check_ret("acl.rt.launch_callback", acl.rt.launch_callback(
                self._callback, (i, dev_out, out_size), ACL_CALLBACK_BLOCK, self.stream))
            keep.append((data, inputs, outputs, dev_in, dev_out))
        check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(self.stream))
        check_ret("acl.rt.unsubscribe_report", acl.rt.unsubscribe_report(tid, self.stream))
        self.exit_flag = True
        check_ret("acl.util.stop_thread", acl.util.stop_thread(tid))
        for _data, inputs, outputs, dev_in, dev_out in keep:
            for dataset in (inputs, outputs):
                check_ret("acl.destroy_data_buffer",
                          acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(dataset, 0)))
                check_ret("acl.mdl.destroy_dataset", acl.mdl.destroy_dataset(dataset))
            check_ret("acl.rt.free", acl.rt.free(dev_in))
            check_ret("acl.rt.free", acl.rt.free(dev_out))
        assert self.callback_threads == {tid}, (self.callback_threads, tid)
        return np.stack([self.results[i] for i in range(len(images))])

    def release(self):
        check_ret("acl.mdl.unload", acl.mdl.unload(self.model_id))
        check_ret("acl.mdl.destroy_desc", acl.mdl.destroy_desc(self.desc))
        check_ret("acl.rt.destroy_stream", acl.rt.destroy_stream(self.stream))
        check_ret("acl.rt.destroy_context", acl.rt.destroy_context(self.context))
        check_ret("acl.rt.reset_device", acl.rt.reset_device(0))
        check_ret("acl.finalize", acl.finalize())


if __name__ == "__main__":
    net = AsyncNet(sys.argv[1])
    out = net.run(np.load(sys.argv[2]))
    net.release()
    np.save(sys.argv[3], out)
    print("callbacks", len(out))
