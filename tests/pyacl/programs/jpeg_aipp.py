"""A pyACL program with DVPP: decode a JPEG on the device (acl.media.dvpp_jpeg_*),
resize the NV12 picture with the VPC to the model's size, and feed it to a
model whose input has static AIPP, as the official DVPP samples do.

    python jpeg_aipp.py MODEL.om IMAGE.jpg OUT.npy PICTURE.npy WIDTH HEIGHT
"""

import sys

import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEM_MALLOC_NORMAL_ONLY = 2
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
PIXEL_FORMAT_YUV_SEMIPLANAR_420 = 1


def check_ret(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed ret={ret}: {acl.get_recent_err_msg()}")


def align(value, to):
    return (value + to - 1) // to * to


def pic_desc(ptr, size, width, height, width_stride, height_stride):
    desc = acl.media.dvpp_create_pic_desc()
    check_ret("acl.media.dvpp_set_pic_desc_data", acl.media.dvpp_set_pic_desc_data(desc, ptr))
    check_ret("acl.media.dvpp_set_pic_desc_size", acl.media.dvpp_set_pic_desc_size(desc, size))
    check_ret("acl.media.dvpp_set_pic_desc_format",
              acl.media.dvpp_set_pic_desc_format(desc, PIXEL_FORMAT_YUV_SEMIPLANAR_420))
    check_ret("acl.media.dvpp_set_pic_desc_width", acl.media.dvpp_set_pic_desc_width(desc, width))
    check_ret("acl.media.dvpp_set_pic_desc_height", acl.media.dvpp_set_pic_desc_height(desc, height))
    check_ret("acl.media.dvpp_set_pic_desc_width_stride",
              acl.media.dvpp_set_pic_desc_width_stride(desc, width_stride))
    check_ret("acl.media.dvpp_set_pic_desc_height_stride",
              acl.media.dvpp_set_pic_desc_height_stride(desc, height_stride))
    return desc


def main(model_path, jpeg_path, width, height):
    check_ret("acl.init", acl.init())
    check_ret("acl.rt.set_device", acl.rt.set_device(0))
    context, ret = acl.rt.create_context(0)
    check_ret("acl.rt.create_context", ret)
    stream, ret = acl.rt.create_stream()
    check_ret("acl.rt.create_stream", ret)
    channel = acl.media.dvpp_create_channel_desc()
    check_ret("acl.media.dvpp_create_channel", acl.media.dvpp_create_channel(channel))

    # JPEG decode into an NV12 picture with 128 x 16 aligned strides
    jpeg = np.fromfile(jpeg_path, dtype=np.uint8)
    info = acl.media.dvpp_jpeg_get_image_info(acl.util.numpy_to_ptr(jpeg), jpeg.size)
    src_w, src_h, _components, ret = info
    check_ret("acl.media.dvpp_jpeg_get_image_info", ret)
    jpeg_dev, ret = acl.media.dvpp_malloc(jpeg.size)
    check_ret("acl.media.dvpp_malloc", ret)
    check_ret("acl.rt.memcpy", acl.rt.memcpy(jpeg_dev, jpeg.size, acl.util.numpy_to_ptr(jpeg), jpeg.size,
                                             ACL_MEMCPY_HOST_TO_DEVICE))
    ws, hs = align(src_w, 128), align(src_h, 16)
    predicted, ret = acl.media.dvpp_jpeg_predict_dec_size(acl.util.numpy_to_ptr(jpeg), jpeg.size,
                                                          PIXEL_FORMAT_YUV_SEMIPLANAR_420)
    check_ret("acl.media.dvpp_jpeg_predict_dec_size", ret)
    decoded_size = max(predicted, ws * hs * 3 // 2)
    decoded_dev, ret = acl.media.dvpp_malloc(decoded_size)
    check_ret("acl.media.dvpp_malloc", ret)
    decoded = pic_desc(decoded_dev, decoded_size, src_w, src_h, ws, hs)
    check_ret("acl.media.dvpp_jpeg_decode_async",
              acl.media.dvpp_jpeg_decode_async(channel, jpeg_dev, jpeg.size, decoded, stream))
    check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
    assert acl.media.dvpp_get_pic_desc_width(decoded) == src_w
    assert acl.media.dvpp_get_pic_desc_height(decoded) == src_h

    # VPC resize to the model's picture
    resized_size = width * height * 3 // 2
    resized_dev, ret = acl.media.dvpp_malloc(resized_size)
    check_ret("acl.media.dvpp_malloc", ret)
    resized = pic_desc(resized_dev, resized_size, width, height, align(width, 16), align(height, 2))
    config = acl.media.dvpp_create_resize_config()
    check_ret("acl.media.dvpp_vpc_resize_async",
              acl.media.dvpp_vpc_resize_async(channel, decoded, resized, config, stream))
    check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
    picture = np.frombuffer(acl.util.ptr_to_bytes(resized_dev, resized_size), np.uint8).copy()

    # the static-AIPP model takes the NV12 picture as it is
    model_id, ret = acl.mdl.load_from_file(model_path)
    check_ret("acl.mdl.load_from_file", ret)
    desc = acl.mdl.create_desc()
    check_ret("acl.mdl.get_desc", acl.mdl.get_desc(desc, model_id))
    assert acl.mdl.get_input_size_by_index(desc, 0) == resized_size
    inputs, outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    _, ret = acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(resized_dev, resized_size))
    check_ret("acl.mdl.add_dataset_buffer", ret)
    out_size = acl.mdl.get_output_size_by_index(desc, 0)
    out_dev, ret = acl.rt.malloc(out_size, ACL_MEM_MALLOC_NORMAL_ONLY)
    check_ret("acl.rt.malloc", ret)
    _, ret = acl.mdl.add_dataset_buffer(outputs, acl.create_data_buffer(out_dev, out_size))
    check_ret("acl.mdl.add_dataset_buffer", ret)
    check_ret("acl.mdl.execute", acl.mdl.execute(model_id, inputs, outputs))
    dims, ret = acl.mdl.get_output_dims(desc, 0)
    check_ret("acl.mdl.get_output_dims", ret)
    result = np.zeros(dims["dims"], np.float32)
    check_ret("acl.rt.memcpy", acl.rt.memcpy(acl.util.numpy_to_ptr(result), result.nbytes, out_dev, out_size,
                                             ACL_MEMCPY_DEVICE_TO_HOST))

    for dataset in (inputs, outputs):
        check_ret("acl.destroy_data_buffer", acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(dataset, 0)))
        check_ret("acl.mdl.destroy_dataset", acl.mdl.destroy_dataset(dataset))
    check_ret("acl.rt.free", acl.rt.free(out_dev))
    check_ret("acl.mdl.unload", acl.mdl.unload(model_id))
    check_ret("acl.mdl.destroy_desc", acl.mdl.destroy_desc(desc))
    check_ret("acl.media.dvpp_destroy_resize_config", acl.media.dvpp_destroy_resize_config(config))
    for desc_, ptr in ((decoded, decoded_dev), (resized, resized_dev)):
        check_ret("acl.media.dvpp_destroy_pic_desc", acl.media.dvpp_destroy_pic_desc(desc_))
        check_ret("acl.media.dvpp_free", acl.media.dvpp_free(ptr))
    check_ret("acl.media.dvpp_free", acl.media.dvpp_free(jpeg_dev))
    check_ret("acl.media.dvpp_destroy_channel", acl.media.dvpp_destroy_channel(channel))
    check_ret("acl.media.dvpp_destroy_channel_desc", acl.media.dvpp_destroy_channel_desc(channel))
    check_ret("acl.rt.destroy_stream", acl.rt.destroy_stream(stream))
    check_ret("acl.rt.destroy_context", acl.rt.destroy_context(context))
    check_ret("acl.rt.reset_device", acl.rt.reset_device(0))
    check_ret("acl.finalize", acl.finalize())
    return result, picture


if __name__ == "__main__":
    out, pic = main(sys.argv[1], sys.argv[2], int(sys.argv[5]), int(sys.argv[6]))
    np.save(sys.argv[3], out)
    np.save(sys.argv[4], pic)
    print("output", out.shape)
