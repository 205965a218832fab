/*
 * chain_loop.c -- the hand-written C limit for the host-cost benchmarks.
 *
 * A chain of models (model k's only output feeds model k+1's only input),
 * one stream per model plus a copy-in and a copy-out stream, `depth` slots
 * of device tensors, datasets, events and pinned staging.  Per request r, in
 * slot r % depth, exactly these AscendCL calls:
 *
 *   aclrtSynchronizeEvent(done)          the slot's previous request, r - depth
 *   (copy its outputs out, write the new input into pinned staging)
 *   aclrtMemcpyAsync H2D, aclrtRecordEvent(ready)          on the copy-in stream
 *   per model: aclrtStreamWaitEvent(producer's event),
 *              [aclmdlSetDynamicBatchSize: models with batch gears only]
 *              aclmdlExecuteAsync, aclrtRecordEvent        on the model's stream
 *   aclrtStreamWaitEvent, aclrtMemcpyAsync D2H, aclrtRecordEvent(done)
 *                                                          on the copy-out stream
 *
 * `ring_wait` = 1 waits the engine's way instead: nothing while a slot is
 * free; when the next slot is busy, one wait for the request half the ring
 * ahead, then the older ones delivered (their waits return at once).
 *
 * Returns the calling thread's CPU nanoseconds (CLOCK_THREAD_CPUTIME_ID)
 * for the request loop alone, or -1 after printing what failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "loops.h"

#define MAX_MODELS 64
#define MAX_DEPTH 16
/* One model of the chain: its id, description, and the index of its batch
 * gear input (or -1 for a static model). */
typedef struct {
    uint32_t id;
    aclmdlDesc *desc;
    long dyn;
    size_t in_size, out_size, dyn_size;
} chain_model;

/* One slot: device tensors (the input, then each model's output), gear
 * buffers, datasets, events and pinned staging. */
typedef struct {
    void *tensor[MAX_MODELS + 1], *dynbuf[MAX_MODELS];
    aclmdlDataset *ins[MAX_MODELS], *outs[MAX_MODELS];
    aclrtEvent node_done[MAX_MODELS], ready, done;
    void *host_in, *host_out;
    int busy;
} chain_slot;

typedef struct {
    int n_models, depth;
    uint64_t batch;
    size_t in_bytes, out_bytes;   /* one request's, at `batch` rows */
    chain_model m[MAX_MODELS];
    aclrtStream copy_in, copy_out, streams[MAX_MODELS];
    chain_slot s[MAX_DEPTH];
    float *user_in, *user_out;
} chain;

static size_t row_bytes(const aclmdlIODims *dims)
{
    size_t row = sizeof(float);
    for (size_t d = 1; d < dims->dimCount; d++)
        row *= (size_t)dims->dims[d];
    return row;
}

static int add_buffer(aclmdlDataset *set, void *ptr, size_t size)
{
    CHECK(aclmdlAddDatasetBuffer(set, aclCreateDataBuffer(ptr, size)));
    return 0;
}

static int load_models(chain *c, const char *const *paths)
{
    for (int k = 0; k < c->n_models; k++) {
        chain_model *m = &c->m[k];
        CHECK(aclmdlLoadFromFile(paths[k], &m->id));
        m->desc = aclmdlCreateDesc();
        CHECK(aclmdlGetDesc(m->desc, m->id));
        size_t dyn;
        m->dyn = aclmdlGetInputIndexByName(m->desc, ACL_DYNAMIC_TENSOR_NAME, &dyn) == ACL_SUCCESS ? (long)dyn : -1;
        m->in_size = aclmdlGetInputSizeByIndex(m->desc, 0);
        m->out_size = aclmdlGetOutputSizeByIndex(m->desc, 0);
        m->dyn_size = m->dyn >= 0 ? aclmdlGetInputSizeByIndex(m->desc, (size_t)m->dyn) : 0;
    }
    aclmdlIODims dims;
    CHECK(aclmdlGetInputDims(c->m[0].desc, 0, &dims));
    c->in_bytes = row_bytes(&dims) * c->batch;
    CHECK(aclmdlGetOutputDims(c->m[c->n_models - 1].desc, 0, &dims));
    c->out_bytes = row_bytes(&dims) * c->batch;
    return 0;
}

static int make_slot(chain *c, chain_slot *s)
{
    CHECK(aclrtMalloc(&s->tensor[0], c->m[0].in_size, ACL_MEM_MALLOC_HUGE_FIRST));
    for (int k = 0; k < c->n_models; k++) {
        const chain_model *m = &c->m[k];
        CHECK(aclrtMalloc(&s->tensor[k + 1], m->out_size, ACL_MEM_MALLOC_HUGE_FIRST));
        s->ins[k] = aclmdlCreateDataset();
        s->outs[k] = aclmdlCreateDataset();
        if (add_buffer(s->ins[k], s->tensor[k], m->in_size))
            return -1;
        if (m->dyn >= 0) {
            CHECK(aclrtMalloc(&s->dynbuf[k], m->dyn_size, ACL_MEM_MALLOC_HUGE_FIRST));
            if (add_buffer(s->ins[k], s->dynbuf[k], m->dyn_size))
                return -1;
        }
        if (add_buffer(s->outs[k], s->tensor[k + 1], m->out_size))
            return -1;
        CHECK(aclrtCreateEventWithFlag(&s->node_done[k], ACL_EVENT_SYNC));
    }
    CHECK(aclrtCreateEventWithFlag(&s->ready, ACL_EVENT_SYNC));
    CHECK(aclrtCreateEventWithFlag(&s->done, ACL_EVENT_SYNC));
    CHECK(aclrtMallocHost(&s->host_in, c->in_bytes));
    CHECK(aclrtMallocHost(&s->host_out, c->out_bytes));
    return 0;
}

static void free_slot(chain *c, chain_slot *s)
{
    for (int k = 0; k < c->n_models; k++) {
        size_t n_in = aclmdlGetDatasetNumBuffers(s->ins[k]);
        for (size_t b = 0; b < n_in; b++)
            aclDestroyDataBuffer(aclmdlGetDatasetBuffer(s->ins[k], b));
        aclDestroyDataBuffer(aclmdlGetDatasetBuffer(s->outs[k], 0));
        aclmdlDestroyDataset(s->ins[k]);
        aclmdlDestroyDataset(s->outs[k]);
        aclrtDestroyEvent(s->node_done[k]);
        aclrtFree(s->tensor[k + 1]);
        if (s->dynbuf[k])
            aclrtFree(s->dynbuf[k]);
    }
    aclrtFree(s->tensor[0]);
    aclrtDestroyEvent(s->ready);
    aclrtDestroyEvent(s->done);
    aclrtFreeHost(s->host_in);
    aclrtFreeHost(s->host_out);
}

/* Wait for a slot's request and copy its outputs to the caller's array. */
static int deliver(chain *c, chain_slot *s)
{
    CHECK(aclrtSynchronizeEvent(s->done));
    memcpy(c->user_out, s->host_out, c->out_bytes);
    s->busy = 0;
    return 0;
}

/* The sequence for one request in slot s (see the file comment). */
static int enqueue(chain *c, chain_slot *s)
{
    memcpy(s->host_in, c->user_in, c->in_bytes);
    CHECK(aclrtMemcpyAsync(s->tensor[0], c->m[0].in_size, s->host_in, c->in_bytes, ACL_MEMCPY_HOST_TO_DEVICE,
                           c->copy_in));
    CHECK(aclrtRecordEvent(s->ready, c->copy_in));
    for (int k = 0; k < c->n_models; k++) {
        const chain_model *m = &c->m[k];
        CHECK(aclrtStreamWaitEvent(c->streams[k], k == 0 ? s->ready : s->node_done[k - 1]));
        if (m->dyn >= 0)
            CHECK(aclmdlSetDynamicBatchSize(m->id, s->ins[k], (size_t)m->dyn, c->batch));
        CHECK(aclmdlExecuteAsync(m->id, s->ins[k], s->outs[k], c->streams[k]));
        CHECK(aclrtRecordEvent(s->node_done[k], c->streams[k]));
    }
    CHECK(aclrtStreamWaitEvent(c->copy_out, s->node_done[c->n_models - 1]));
    CHECK(aclrtMemcpyAsync(s->host_out, c->out_bytes, s->tensor[c->n_models], c->out_bytes,
                           ACL_MEMCPY_DEVICE_TO_HOST, c->copy_out));
    CHECK(aclrtRecordEvent(s->done, c->copy_out));
    s->busy = 1;
    return 0;
}

/* The timed part.  Not inlined: a symbol of its own lets an instruction
 * counter collect the request loop alone (benchmarks/host_instructions.py). */
__attribute__((noinline, noclone)) static long long run_requests(chain *c, int n_requests, int ring_wait)
{
    int depth = c->depth;
    long long start = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int r = 0; r < n_requests; r++) {
        chain_slot *s = &c->s[r % depth];
        if (s->busy && ring_wait) {
            int ahead = depth / 2 - 1 > 0 ? depth / 2 - 1 : 0;
            CHECK(aclrtSynchronizeEvent(c->s[(r + ahead) % depth].done));
            for (int k = 0; k <= ahead; k++)
                if (deliver(c, &c->s[(r + k) % depth]))
                    return -1;
        } else if (s->busy && deliver(c, s)) {
            return -1;
        }
        if (enqueue(c, s))
            return -1;
    }
    for (int k = 0; k < depth; k++) {
        chain_slot *s = &c->s[(n_requests + k) % depth];
        if (s->busy && deliver(c, s))
            return -1;
    }
    return cpu_ns(CLOCK_THREAD_CPUTIME_ID) - start;
}

long long chain_loop(const char *const *paths, int n_models, int depth, int n_requests, int batch, int ring_wait)
{
    if (n_models < 1 || n_models > MAX_MODELS || depth < 1 || depth > MAX_DEPTH || batch < 1) {
        fprintf(stderr, "chain_loop: 1 to %d models, depth 1 to %d, batch >= 1; got %d, %d, %d\n", MAX_MODELS,
                MAX_DEPTH, n_models, depth, batch);
        return -1;
    }
    CHECK(aclrtSetDevice(0));
    chain *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->n_models = n_models;
    c->depth = depth;
    c->batch = (uint64_t)batch;
    long long elapsed = -1;
    if (load_models(c, paths) == 0) {
        int made = 0;
        int ok = aclrtCreateStream(&c->copy_in) == ACL_SUCCESS && aclrtCreateStream(&c->copy_out) == ACL_SUCCESS;
        for (int k = 0; ok && k < n_models; k++)
            ok = aclrtCreateStream(&c->streams[k]) == ACL_SUCCESS;
        while (ok && made < depth && make_slot(c, &c->s[made]) == 0)
            made++;
        c->user_in = calloc(1, c->in_bytes);
        c->user_out = calloc(1, c->out_bytes);
        if (ok && made == depth && c->user_in && c->user_out)
            elapsed = run_requests(c, n_requests, ring_wait);
        else
            fprintf(stderr, "chain_loop: setting up the chain failed: %s\n", aclGetRecentErrMsg());
        for (int k = 0; k < made; k++)
            free_slot(c, &c->s[k]);
        free(c->user_in);
        free(c->user_out);
    }
    for (int k = 0; k < n_models; k++) {
        if (c->streams[k])
            aclrtDestroyStream(c->streams[k]);
        if (c->m[k].desc) {
            aclmdlDestroyDesc(c->m[k].desc);
            aclmdlUnload(c->m[k].id);
        }
    }
    if (c->copy_in)
        aclrtDestroyStream(c->copy_in);
    if (c->copy_out)
        aclrtDestroyStream(c->copy_out);
    free(c);
    aclrtResetDevice(0);
    return elapsed;
}
