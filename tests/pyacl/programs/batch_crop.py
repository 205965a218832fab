"""A pyACL program with the VPC's batch calls, written from pyACL's documented
signatures: the region counts and the regions are Python lists, and
dvpp_vpc_batch_crop_async / dvpp_vpc_batch_crop_and_paste_async return
(dst_batch_pic_descs, ret), dvpp_vpc_batch_crop_resize_paste_async the code
alone.  One NV12 picture, three regions of the model's size, cropped into
three pictures, then pasted into three larger ones (without and with a
resize configuration).

    python batch_crop.py SRC.npy WIDTH HEIGHT OUT.npz
"""

import sys

import acl
import numpy as np

ACL_SUCCESS = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
PIXEL_FORMAT_YUV_SEMIPLANAR_420 = 1
REGIONS = [(0, 0), (64, 32), (128, 96)]  # left, top of each 64 x 32 region
CW, CH = 64, 32
PW, PH, PASTE_LEFT, PASTE_TOP = 128, 64, 32, 16


def check_ret(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed ret={ret}: {acl.get_recent_err_msg()}")


def describe(desc, width, height):
    """Give a picture of a batch its own device buffer, zeroed."""
    size = width * height * 3 // 2
    dev, ret = acl.media.dvpp_malloc(size)
    check_ret("acl.media.dvpp_malloc", ret)
    check_ret("acl.rt.memset", acl.rt.memset(dev, size, 0, size))
    for setter, value in (("data", dev), ("size", size), ("format", PIXEL_FORMAT_YUV_SEMIPLANAR_420),
                          ("width", width), ("height", height), ("width_stride", width),
                          ("height_stride", height)):
        set_field = getattr(acl.media, f"dvpp_set_pic_desc_{setter}")
        check_ret(f"dvpp_set_pic_desc_{setter}", set_field(desc, value))
    return dev, size


def read(desc):
    check_ret("acl.media.dvpp_get_pic_desc_ret_code", acl.media.dvpp_get_pic_desc_ret_code(desc))
    size = acl.media.dvpp_get_pic_desc_size(desc)
    out = np.zeros(size, np.uint8)
    check_ret("acl.rt.memcpy", acl.rt.memcpy(acl.util.numpy_to_ptr(out), size,
                                              acl.media.dvpp_get_pic_desc_data(desc), size,
                                              ACL_MEMCPY_DEVICE_TO_HOST))
    return out


def main(src_path, width, height, out_path):
    src = np.ascontiguousarray(np.load(src_path))
    check_ret("acl.init", acl.init())
    check_ret("acl.rt.set_device", acl.rt.set_device(0))
    context, ret = acl.rt.create_context(0)
    check_ret("acl.rt.create_context", ret)
    stream, ret = acl.rt.create_stream()
    check_ret("acl.rt.create_stream", ret)
    channel = acl.media.dvpp_create_channel_desc()
    check_ret("acl.media.dvpp_create_channel", acl.media.dvpp_create_channel(channel))

    n = len(REGIONS)
    in_batch = acl.media.dvpp_create_batch_pic_desc(1)
    src_dev, size = describe(acl.media.dvpp_get_pic_desc(in_batch, 0), width, height)
    check_ret("acl.rt.memcpy", acl.rt.memcpy(src_dev, size, acl.util.numpy_to_ptr(src), size,
                                              ACL_MEMCPY_HOST_TO_DEVICE))
    crops = [acl.media.dvpp_create_roi_config(x, x + CW - 1, y, y + CH - 1) for x, y in REGIONS]
    pastes = [acl.media.dvpp_create_roi_config(PASTE_LEFT, PASTE_LEFT + CW - 1, PASTE_TOP, PASTE_TOP + CH - 1)
              for _ in REGIONS]
    results = {}
    buffers = [src_dev]
    resize = acl.media.dvpp_create_resize_config()
    for kind, w, h in (("crop", CW, CH), ("paste", PW, PH), ("resize_paste", PW, PH)):
        out_batch = acl.media.dvpp_create_batch_pic_desc(n)
        buffers += [describe(acl.media.dvpp_get_pic_desc(out_batch, i), w, h)[0] for i in range(n)]
        if kind == "crop":
            got, ret = acl.media.dvpp_vpc_batch_crop_async(channel, in_batch, [n], out_batch, crops, stream)
        elif kind == "paste":
            got, ret = acl.media.dvpp_vpc_batch_crop_and_paste_async(channel, in_batch, [n], out_batch, crops,
                                                                     pastes, stream)
        else:  # this one returns the code alone
            got = out_batch
            ret = acl.media.dvpp_vpc_batch_crop_resize_paste_async(channel, in_batch, [n], out_batch, crops,
                                                                   pastes, resize, stream)
        check_ret(f"batch {kind}", ret)
        assert got == out_batch, (got, out_batch)
        check_ret("acl.rt.synchronize_stream", acl.rt.synchronize_stream(stream))
        results[kind] = np.stack([read(acl.media.dvpp_get_pic_desc(out_batch, i)) for i in range(n)])
        # fewer regions in the list than the counts say: a code, never a read past the list
        _, short = acl.media.dvpp_vpc_batch_crop_async(channel, in_batch, [n], out_batch, crops[:1], stream)
        print(kind, "short list", short, acl.get_recent_err_msg())
        check_ret("acl.media.dvpp_destroy_batch_pic_desc", acl.media.dvpp_destroy_batch_pic_desc(out_batch))
    np.savez(out_path, **results)
    check_ret("acl.media.dvpp_destroy_resize_config", acl.media.dvpp_destroy_resize_config(resize))

    for roi in crops + pastes:
        check_ret("acl.media.dvpp_destroy_roi_config", acl.media.dvpp_destroy_roi_config(roi))
    check_ret("acl.media.dvpp_destroy_batch_pic_desc", acl.media.dvpp_destroy_batch_pic_desc(in_batch))
    for dev in buffers:
        check_ret("acl.media.dvpp_free", acl.media.dvpp_free(dev))
    check_ret("acl.media.dvpp_destroy_channel", acl.media.dvpp_destroy_channel(channel))
    check_ret("acl.media.dvpp_destroy_channel_desc", acl.media.dvpp_destroy_channel_desc(channel))
    check_ret("acl.rt.destroy_stream", acl.rt.destroy_stream(stream))
    check_ret("acl.rt.destroy_context", acl.rt.destroy_context(context))
    check_ret("acl.rt.reset_device", acl.rt.reset_device(0))
    check_ret("acl.finalize", acl.finalize())


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
