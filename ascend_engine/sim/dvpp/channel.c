/*
 * channel.c -- channel descriptions and channels.  A channel is created on
 * the calling thread's current device; its mode says which modules (VPC,
 * JPEGD, JPEGE) it drives, 0 meaning all.  A device has at most 256 DVPP
 * channels at once (docs/simulator.md, "DVPP").  Destroying a channel while
 * tasks for it are still queued is allowed, as on the NPU; those tasks then
 * fail on the stream with a message that says so.
 */
#include <stdlib.h>

#include "dvpp_internal.h"

#define DVPP_MAX_CHANNELS_PER_DEVICE 256
#define DVPP_MODE_ALL (DVPP_CHNMODE_VPC | DVPP_CHNMODE_JPEGD | DVPP_CHNMODE_JPEGE)
#define DVPP_MAX_DEVICES 1024

static int channels_on_device[DVPP_MAX_DEVICES];   /* guarded by dvpp_lock */
static uint64_t next_channel_id;

static void channel_free(dvpp_obj *o)
{
    free(o);
}

STANDIN_EXPORT acldvppChannelDesc *acldvppCreateChannelDesc(void)
{
    acldvppChannelDesc *c = calloc(1, sizeof *c);
    if (!c || dvpp_obj_add(&c->h, DVPP_OBJ_CHANNEL, channel_free)) {
        free(c);
        aeSimError(ACL_ERROR_BAD_ALLOC, "acldvppCreateChannelDesc", "out of host memory");
        return NULL;
    }
    return c;
}

STANDIN_EXPORT aclError acldvppDestroyChannelDesc(acldvppChannelDesc *channelDesc)
{
    const char *fn = "acldvppDestroyChannelDesc";
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "channelDesc", channelDesc, DVPP_OBJ_CHANNEL);
    if (!rc && channelDesc->created)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "channelDesc %p still has a channel (channel id %llu): call acldvppDestroyChannel first",
                        (void *)channelDesc, (unsigned long long)channelDesc->channel_id);
    if (!rc)
        dvpp_obj_remove_locked(&channelDesc->h);
    dvpp_unlock();
    return rc;
}

STANDIN_EXPORT aclError acldvppSetChannelDescMode(acldvppChannelDesc *channelDesc, uint32_t mode)
{
    const char *fn = "acldvppSetChannelDescMode";
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "channelDesc", channelDesc, DVPP_OBJ_CHANNEL);
    if (!rc && (mode & ~(uint32_t)DVPP_MODE_ALL))
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "mode %u is not a combination of DVPP_CHNMODE_VPC (1), DVPP_CHNMODE_JPEGD (2) and "
                        "DVPP_CHNMODE_JPEGE (4)", mode);
    if (!rc && channelDesc->created)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                        "channelDesc %p already has a channel: set the mode before acldvppCreateChannel",
                        (void *)channelDesc);
    if (!rc)
        channelDesc->mode = mode;
    dvpp_unlock();
    return rc;
}

STANDIN_EXPORT uint64_t acldvppGetChannelDescChannelId(const acldvppChannelDesc *channelDesc)
{
    dvpp_lock();
    uint64_t id = 0;
    if (!dvpp_obj_check_locked("acldvppGetChannelDescChannelId", "channelDesc", channelDesc, DVPP_OBJ_CHANNEL))
        id = channelDesc->channel_id;
    dvpp_unlock();
    return id;
}

STANDIN_EXPORT aclError acldvppCreateChannel(acldvppChannelDesc *channelDesc)
{
    const char *fn = "acldvppCreateChannel";
    int32_t device = -1;
    aclError rc = aclrtGetDevice(&device);   /* needs a current context, as in CANN */
    if (rc)
        return aeSimError(rc, fn, "no current device on this thread: call aclrtSetDevice or aclrtSetCurrentContext "
                          "before creating a DVPP channel");
    dvpp_lock();
    rc = dvpp_obj_check_locked(fn, "channelDesc", channelDesc, DVPP_OBJ_CHANNEL);
    if (!rc && channelDesc->created)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "channelDesc %p already has a channel (channel id %llu)",
                        (void *)channelDesc, (unsigned long long)channelDesc->channel_id);
    if (!rc && (device < 0 || device >= DVPP_MAX_DEVICES))
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "device %d is out of the DVPP's range", (int)device);
    if (!rc && channels_on_device[device] >= DVPP_MAX_CHANNELS_PER_DEVICE)
        rc = aeSimError(ACL_ERROR_RT_RESOURCE_ALLOC_FAIL, fn,
                        "device %d already has %d DVPP channels, the most a device has: destroy one first",
                        (int)device, DVPP_MAX_CHANNELS_PER_DEVICE);
    if (!rc) {
        channels_on_device[device]++;
        channelDesc->created = 1;
        channelDesc->generation++;
        channelDesc->device_id = device;
        channelDesc->channel_id = next_channel_id++;
    }
    dvpp_unlock();
    return rc;
}

STANDIN_EXPORT aclError acldvppDestroyChannel(acldvppChannelDesc *channelDesc)
{
    const char *fn = "acldvppDestroyChannel";
    dvpp_lock();
    aclError rc = dvpp_obj_check_locked(fn, "channelDesc", channelDesc, DVPP_OBJ_CHANNEL);
    if (!rc && !channelDesc->created)
        rc = aeSimError(ACL_ERROR_INVALID_PARAM, fn, "channelDesc %p has no channel: call acldvppCreateChannel first",
                        (void *)channelDesc);
    if (!rc) {
        channels_on_device[channelDesc->device_id]--;
        channelDesc->created = 0;
        channelDesc->generation++;
    }
    dvpp_unlock();
    return rc;
}

aclError dvpp_check_channel_locked(const char *fn, const acldvppChannelDesc *c, uint32_t module, int32_t device_id)
{
    aclError rc = dvpp_obj_check_locked(fn, "channelDesc", c, DVPP_OBJ_CHANNEL);
    if (rc)
        return rc;
    if (!c->created)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "channelDesc %p has no channel: call acldvppCreateChannel before submitting work",
                          (const void *)c);
    if (module && c->mode && !(c->mode & module))   /* module 0: PNGD, which has no mode bit */
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "the channel's mode %u does not include %s (%u): set it with acldvppSetChannelDescMode "
                          "before acldvppCreateChannel",
                          c->mode, module == DVPP_CHNMODE_VPC ? "DVPP_CHNMODE_VPC" :
                          module == DVPP_CHNMODE_JPEGD ? "DVPP_CHNMODE_JPEGD" : "DVPP_CHNMODE_JPEGE", module);
    if (c->device_id != device_id)
        return aeSimError(ACL_ERROR_INVALID_PARAM, fn,
                          "the channel was created on device %d but the stream belongs to device %d",
                          (int)c->device_id, (int)device_id);
    return ACL_SUCCESS;
}
