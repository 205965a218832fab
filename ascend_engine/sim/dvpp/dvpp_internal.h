/*
 * dvpp_internal.h -- the private interface between the files of
 * libacl_dvpp.so, the simulator's DVPP (docs/simulator.md, "DVPP"):
 *
 *   memory.c     acldvppMalloc / acldvppFree, the DVPP-memory check
 *   objects.c    live handles, references, the one lock of the library
 *   channel.c    channel descriptions and channels
 *   pic_desc.c   picture descriptions and batches of them
 *   configs.c    ROI, resize, border and JPEG-encode configurations
 *   soc.c        the SoC's rules and modelled device times
 *   picture.c    pixel-format geometry; a picture description checked against its buffer
 *   task.c       image tasks on a stream: references, pins, device time
 *   jpegd.c      JPEG header parsing, decode size, acldvppJpegDecodeAsync
 *   jpege.c      acldvppJpegPredictEncSize, acldvppJpegEncodeAsync
 *   pngd.c       PNG header information, decode size, acldvppPngDecodeAsync (with libpng)
 *   vpc.c        the VPC calls: their rules and their tasks
 *   vpc_pixels.c the VPC pixel work: sampling, resampling, colour conversion
 *   video.c      the VDEC / VENC API, answered as unsupported (no video codec is simulated)
 *
 * Every refusal goes through aeSimError (the simulator's recent error,
 * aclGetRecentErrMsg) with a message naming the call, the argument, the rule
 * and the value got.
 */
#ifndef AE_DVPP_INTERNAL_H
#define AE_DVPP_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "standin.h"
#define AE_DVPP_OWN_BASE
#include "acl/ops/acl_dvpp.h"

#define DVPP_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* A DVPP task that fails on the device: CANN's DVPP kernels run as AI CPU
 * tasks, whose failure aclrtSynchronizeStream reports as this code. */
#define DVPP_TASK_FAILED 507018

/* ---- memory.c ---------------------------------------------------------------------------------- */

/* [p, p+len) inside one live device allocation of device_id and, on Ascend
 * 310, inside memory from acldvppMalloc; else the refusal naming fn/arg. */
aclError dvpp_check_memory(const char *fn, const char *arg, const void *p, size_t len, int32_t device_id);

/* ---- objects.c ------------------------------------------------------------------------------- */

typedef enum {
    DVPP_OBJ_CHANNEL = 1,
    DVPP_OBJ_PIC,
    DVPP_OBJ_BATCH,
    DVPP_OBJ_ROI,
    DVPP_OBJ_RESIZE,
    DVPP_OBJ_BORDER,
    DVPP_OBJ_JPEGE,
} dvpp_kind;

/* First member of every handle: its kind, the references held on it (the
 * user's, until destroy, and one per queued task) and how to free it. */
typedef struct dvpp_obj {
    dvpp_kind kind;
    int refs;
    void (*free_fn)(struct dvpp_obj *);
} dvpp_obj;

/* The library's lock: guards the handle table, references and every field of
 * a handle (tasks write results into picture descriptions from stream workers). */
void dvpp_lock(void);
void dvpp_unlock(void);

/* Registers a new handle with one reference (the user's).  0, or -1 without memory. */
int dvpp_obj_add(dvpp_obj *o, dvpp_kind kind, void (*free_fn)(dvpp_obj *));
/* Under the lock: is p a live handle of that kind? */
int dvpp_obj_live_locked(const void *p, dvpp_kind kind);
/* Under the lock: ACL_SUCCESS, or the refusal naming fn/arg for NULL or a
 * pointer that is not a live handle of that kind. */
aclError dvpp_obj_check_locked(const char *fn, const char *arg, const void *p, dvpp_kind kind);
/* Under the lock: unregisters p (destroy) and drops the user's reference. */
void dvpp_obj_remove_locked(dvpp_obj *o);
void dvpp_obj_ref_locked(dvpp_obj *o);
void dvpp_obj_unref_locked(dvpp_obj *o);
const char *dvpp_kind_name(dvpp_kind kind);

/* ---- the handles --------------------------------------------------------------------------- */

struct acldvppChannelDesc {
    dvpp_obj h;
    uint32_t mode;        /* acldvppChannelMode bits; 0 = every module */
    int created;          /* between acldvppCreateChannel and acldvppDestroyChannel */
    uint64_t generation;  /* bumped by every create and destroy: queued tasks compare it */
    uint64_t channel_id;
    int32_t device_id;
};

struct acldvppPicDesc {
    dvpp_obj h;
    void *data;
    uint32_t size;
    uint32_t format;
    uint32_t width, height, width_stride, height_stride;
    uint32_t ret_code;
    acldvppBatchPicDesc *batch;   /* the batch holding it, or NULL */
};

struct acldvppBatchPicDesc {
    dvpp_obj h;
    uint32_t count;
    acldvppPicDesc *pics;
};

struct acldvppRoiConfig {
    dvpp_obj h;
    uint32_t left, right, top, bottom;   /* inclusive pixel bounds */
};

struct acldvppResizeConfig {
    dvpp_obj h;
    uint32_t interpolation;
};

#define DVPP_BORDER_VALUES 4
struct acldvppBorderConfig {
    dvpp_obj h;
    acldvppBorderType type;
    uint32_t top, bottom, left, right;
    double value[DVPP_BORDER_VALUES];
};

struct acldvppJpegeConfig {
    dvpp_obj h;
    uint32_t level;
};

/* ---- soc.c ------------------------------------------------------------------------------------- */

typedef enum { DVPP_SOC_310 = 1, DVPP_SOC_310P, DVPP_SOC_910B } dvpp_soc;

/* The SoC the simulator reports (aclrtGetSocName; ASCEND_SIM_SOC_VERSION). */
dvpp_soc dvpp_current_soc(void);
const char *dvpp_soc_name(dvpp_soc soc);
/* JPEGD output alignment: width stride 128 on Ascend 310, 64 on 310P/910B; height stride 16. */
uint32_t dvpp_jpegd_width_align(dvpp_soc soc);
#define DVPP_JPEGD_HEIGHT_ALIGN 16u
/* Modelled device time of one task, in nanoseconds. */
uint64_t dvpp_jpegd_time_ns(dvpp_soc soc, uint64_t pixels);
uint64_t dvpp_jpege_time_ns(dvpp_soc soc, uint64_t pixels);
uint64_t dvpp_vpc_time_ns(dvpp_soc soc, uint64_t reference_pixels);

/* ---- picture.c ------------------------------------------------------------------------------- */

/* A picture description as a task sees it: copied at submission. */
typedef struct {
    uint8_t *data;
    uint32_t size, format, width, height, width_stride, height_stride;
} dvpp_pic;

/* Geometry of a pixel format: bytes per pixel of the first plane's line
 * (1 for the semi-planar YUVs), and chroma subsampling (0 for no chroma). */
typedef struct {
    const char *name;
    uint32_t line_bytes_per_pixel;
    uint32_t chroma_w_div, chroma_h_div;  /* semi-planar: chroma plane subsampling; 0 = none */
    int packed;                           /* interleaved YUV or RGB in one plane */
} dvpp_format_info;

/* NULL for a format the simulator's DVPP does not know. */
const dvpp_format_info *dvpp_format(uint32_t format);
const char *dvpp_format_name(uint32_t format);
/* Bytes a picture of that layout occupies (strides included). */
uint64_t dvpp_pic_bytes(uint32_t format, uint32_t width_stride, uint32_t height_stride);

void dvpp_pic_snapshot_locked(const acldvppPicDesc *d, dvpp_pic *out);
/* The buffer rules of every task: data set, size covering the layout, and
 * [data, data+size) inside one live allocation of the stream's device. */
aclError dvpp_pic_check_buffer(const char *fn, const char *arg, const dvpp_pic *p, int32_t device_id);

/* ---- task.c ---------------------------------------------------------------------------------- */

typedef struct dvpp_job dvpp_job;
/* The work of a task; returns ACL_SUCCESS or DVPP_TASK_FAILED with msg set. */
typedef aclError (*dvpp_work_fn)(dvpp_job *job, char *msg, size_t n);

struct dvpp_job {
    const char *fn;                 /* the API call, for messages */
    acldvppChannelDesc *channel;    /* referenced */
    uint64_t channel_generation;
    dvpp_obj **refs;                /* handles kept alive for the task */
    size_t n_refs, cap_refs;
    void **pins;                    /* aeSimMemPin tokens */
    const char **pin_names;
    size_t n_pins, cap_pins;
    uint64_t device_ns;             /* modelled device time */
    dvpp_work_fn work;
    void *payload;                  /* owned; freed with free() */
};

/* Under the lock: a job for fn on channel (checked live and created by the
 * caller), holding a reference on it.  NULL when out of memory. */
dvpp_job *dvpp_job_new_locked(const char *fn, acldvppChannelDesc *channel);
/* Under the lock: keeps a handle alive until the task has run. 0 or -1. */
int dvpp_job_ref_locked(dvpp_job *job, dvpp_obj *o);
/* Pins the allocation holding ptr. 0 or -1. */
int dvpp_job_pin(dvpp_job *job, const void *ptr, const char *name);
/* Queues the job on stream; on failure releases it.  Returns the code. */
aclError dvpp_job_submit(dvpp_job *job, aclrtStream stream, const char *what);
/* Releases everything (also for jobs never submitted). */
void dvpp_job_free(dvpp_job *job);

/* What a decode queues once its arguments are checked. */
typedef struct dvpp_decode_task {
    acldvppChannelDesc *channel;    /* the job's channel */
    acldvppPicDesc *output;         /* kept alive until the task has run */
    const void *data;               /* the encoded input, pinned */
    void *out_data;                 /* the output picture's buffer, pinned */
    const void *payload;            /* copied into the job (payload_size bytes) */
    size_t payload_size;
    dvpp_work_fn work;
    uint64_t device_ns;             /* modelled device time */
    const char *what;               /* the task's name on the stream */
} dvpp_decode_task;

/* Under the lock, released here: queue the decode `t` on stream, or return
 * rc when a check before failed (rc nonzero: t is not read).  The job holds
 * the channel and output description and pins both buffers; out of memory
 * fails the call with nothing queued. */
aclError dvpp_decode_submit_locked(const char *fn, aclError rc, const dvpp_decode_task *t, aclrtStream stream);

/* Argument checks shared by the task-submitting calls: a live channel that
 * was created on the stream's device and whose mode allows `module`. */
aclError dvpp_check_channel_locked(const char *fn, const acldvppChannelDesc *c, uint32_t module, int32_t device_id);

/* ---- vpc_pixels.c ------------------------------------------------------------------------------ */

typedef struct {
    uint32_t left, top, width, height;
} dvpp_rect;

typedef enum { DVPP_RESAMPLE_BILINEAR = 0, DVPP_RESAMPLE_NEAREST = 1 } dvpp_resample;

/* Crops src_rect of src, resamples it to dst_rect's size and writes it at
 * dst_rect of dst, converting between the two pixel formats.  Pixels of dst
 * outside dst_rect are not touched.  0, or -1 without memory. */
int dvpp_vpc_blit(const dvpp_pic *src, dvpp_rect src_rect, const dvpp_pic *dst, dvpp_rect dst_rect,
                  dvpp_resample how);
/* The whole picture as full-resolution Y, Cb, Cr, 3 bytes a pixel (w x h x 3). 0, or -1 without memory. */
int dvpp_read_ycc(const dvpp_pic *src, uint8_t *ycc);
/* Writes src into dst with a border (dst is src plus the border on each side). */
int dvpp_vpc_border(const dvpp_pic *src, const dvpp_pic *dst, const acldvppBorderConfig *border);

#endif /* AE_DVPP_INTERNAL_H */
