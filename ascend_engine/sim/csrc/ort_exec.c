/*
 * ort_exec.c -- ONNX models (version 3) computed by ONNX Runtime.
 *
 * The library is loaded at run time, the first time a version-3 model is
 * loaded: from ASCEND_SIM_ORT_LIB (the Python package sets it to the library
 * inside the installed onnxruntime wheel), else libonnxruntime.so on the
 * library path.  One session per loaded model, created at load from the ONNX
 * graph in the model's weights; each execution runs it on the stream worker
 * (no Python involved) over the execution's own buffers: the inputs at the
 * gear's shapes, the outputs written in place at the shapes the model's
 * output table gives for that gear.  A shape-range model's outputs with open
 * dimensions are allocated by ONNX Runtime and copied in after the run, once
 * their size is checked against the buffer.  docs/simulator.md ("ONNX models").
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "ort_api.h"

#define ORT_INSTALL_HINT "pip install ascend-engine[onnx]"
#define MAX_ORT_THREADS 256

static pthread_mutex_t ort_lock = PTHREAD_MUTEX_INITIALIZER;
static const sim_ort_api *ort;        /* set once the library is loaded and accepted */
static OrtEnv *ort_env;               /* one per process, as ONNX Runtime requires */
static OrtMemoryInfo *ort_cpu;        /* describes the simulator's (host) device buffers */

/* The message of a failed ORT call, then the status released. */
static void status_text(OrtStatus *st, char *buf, size_t n)
{
    snprintf(buf, n, "%s", ort->GetErrorMessage(st));
    ort->ReleaseStatus(st);
}

/* Load the library and check its API table.  Called with ort_lock held. */
static aclError load_library(const char *fn)
{
    const char *path = getenv("ASCEND_SIM_ORT_LIB");
    void *lib = NULL;
    if (path && path[0]) {
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            return sim_error(ACL_ERROR_FEATURE_UNSUPPORTED, fn,
                             "this model is an ONNX graph (converted by sim atc) and needs ONNX Runtime: "
                             "ASCEND_SIM_ORT_LIB='%s' cannot be loaded (%s); install it with `" ORT_INSTALL_HINT "`",
                             path, dlerror());
    } else {
        lib = dlopen("libonnxruntime.so", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            lib = dlopen("libonnxruntime.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            return sim_error(ACL_ERROR_FEATURE_UNSUPPORTED, fn,
                             "this model is an ONNX graph (converted by sim atc) and needs ONNX Runtime, which is "
                             "not available: install it with `" ORT_INSTALL_HINT "` (a program not started from "
                             "Python sets ASCEND_SIM_ORT_LIB to the onnxruntime wheel's capi/libonnxruntime.so.*)");
    }
    const sim_ort_api_base *(*get_base)(void) = NULL;
    *(void **)&get_base = dlsym(lib, "OrtGetApiBase");
    const sim_ort_api_base *base = get_base ? get_base() : NULL;
    const sim_ort_api *api = base ? base->GetApi(SIM_ORT_API_VERSION) : NULL;
    if (!api) {
        dlclose(lib);
        return sim_error(ACL_ERROR_FEATURE_UNSUPPORTED, fn,
                         "the ONNX Runtime library%s%s has no OrtGetApiBase or refuses C API version %u; install "
                         "a current one with `" ORT_INSTALL_HINT "`", path ? " " : "", path ? path : "",
                         SIM_ORT_API_VERSION);
    }
    ort = api;
    char msg[512];
    OrtStatus *st = api->CreateEnv(SIM_ORT_LOG_FATAL, "ascend_sim", &ort_env);
    if (!st)
        st = api->CreateCpuMemoryInfo(SIM_ORT_DEVICE_ALLOCATOR, SIM_ORT_MEM_DEFAULT, &ort_cpu);
    if (st) {
        status_text(st, msg, sizeof msg);
        if (ort_env)
            api->ReleaseEnv(ort_env);
        ort_env = NULL;
        ort = NULL;
        dlclose(lib);
        return sim_error(ACL_ERROR_FEATURE_UNSUPPORTED, fn, "ONNX Runtime failed to start: %s", msg);
    }
    if (sim_log_enabled)
        sim_log_note("ONNX Runtime %s loaded from %s", base->GetVersionString(), path ? path : "the library path");
    return ACL_SUCCESS;   /* the library stays loaded for the life of the process */
}

/* ASCEND_SIM_ORT_THREADS: ONNX Runtime's intra-op threads per session (default 1). */
static aclError thread_count(const char *fn, int *out)
{
    const char *v = getenv("ASCEND_SIM_ORT_THREADS");
    *out = 1;
    if (!v || !v[0])
        return ACL_SUCCESS;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < 1 || n > MAX_ORT_THREADS)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "ASCEND_SIM_ORT_THREADS='%s' is invalid: expected a thread "
                         "count in 1..%d", v, MAX_ORT_THREADS);
    *out = (int)n;
    return ACL_SUCCESS;
}

/* Every model input and output is one of the graph's, by name (Run finds them by name). */
static aclError check_names(const char *fn, const sim_model_info *info, OrtSession *s, size_t n_in, size_t n_out)
{
    OrtAllocator *alloc;
    char msg[512];
    OrtStatus *st = ort->GetAllocatorWithDefaultOptions(&alloc);
    for (int is_in = 1; is_in >= 0 && !st; is_in--) {
        uint32_t n = is_in ? info->n_file_inputs : info->n_outputs;
        size_t graph_n = is_in ? n_in : n_out;
        for (uint32_t i = 0; i < n && !st; i++) {
            const char *want = is_in ? info->inputs[i].name : info->outputs[i].name;
            int found = 0;
            for (size_t k = 0; k < graph_n && !found && !st; k++) {
                char *name = NULL;
                st = (is_in ? ort->SessionGetInputName : ort->SessionGetOutputName)(s, k, alloc, &name);
                if (!st) {
                    found = strcmp(name, want) == 0;
                    OrtStatus *fst = ort->AllocatorFree(alloc, name);
                    if (fst)
                        ort->ReleaseStatus(fst);
                }
            }
            if (!st && !found)
                return sim_error(ACL_ERROR_PARSE_MODEL, fn, "model '%s': %s %u '%s' is not an %s of its ONNX graph",
                                 info->name, is_in ? "input" : "output", i, want, is_in ? "input" : "output");
        }
    }
    if (st) {
        status_text(st, msg, sizeof msg);
        return sim_error(ACL_ERROR_PARSE_MODEL, fn, "model '%s': ONNX Runtime: %s", info->name, msg);
    }
    return ACL_SUCCESS;
}

int sim_ort_skip_compute(void)
{
    const char *v = getenv("ASCEND_SIM_COMPUTE");
    return v && strcmp(v, "skip") == 0;
}

aclError sim_ort_session_create(const char *fn, const sim_model_info *info, const void *onnx, size_t size,
                                void **session)
{
    int threads;
    aclError rc = thread_count(fn, &threads);
    if (rc != ACL_SUCCESS)
        return rc;
    pthread_mutex_lock(&ort_lock);
    rc = ort ? ACL_SUCCESS : load_library(fn);
    pthread_mutex_unlock(&ort_lock);
    if (rc != ACL_SUCCESS)
        return rc;

    OrtSessionOptions *opts = NULL;
    OrtSession *s = NULL;
    OrtStatus *st = ort->CreateSessionOptions(&opts);
    if (!st)
        st = ort->SetIntraOpNumThreads(opts, threads);
    if (!st)
        st = ort->SetInterOpNumThreads(opts, 1);
    if (!st)
        st = ort->SetSessionExecutionMode(opts, SIM_ORT_SEQUENTIAL);
    if (!st)
        st = ort->SetSessionGraphOptimizationLevel(opts, SIM_ORT_ENABLE_ALL);
    if (!st)
        st = ort->CreateSessionFromArray(ort_env, onnx, size, opts, &s);
    ort->ReleaseSessionOptions(opts);
    char msg[1024];
    if (st) {
        status_text(st, msg, sizeof msg);
        return sim_error(ACL_ERROR_PARSE_MODEL, fn, "model '%s': ONNX Runtime cannot load its ONNX graph: %s",
                         info->name, msg);
    }
    size_t n_in = 0, n_out = 0;
    st = ort->SessionGetInputCount(s, &n_in);
    if (!st)
        st = ort->SessionGetOutputCount(s, &n_out);
    if (st) {
        status_text(st, msg, sizeof msg);
        ort->ReleaseSession(s);
        return sim_error(ACL_ERROR_PARSE_MODEL, fn, "model '%s': ONNX Runtime: %s", info->name, msg);
    }
    /* the graph may have more outputs than the model keeps (--out_nodes), never fewer inputs */
    if (n_in != info->n_file_inputs || n_out < info->n_outputs) {
        ort->ReleaseSession(s);
        return sim_error(ACL_ERROR_PARSE_MODEL, fn, "model '%s': its ONNX graph has %zu inputs and %zu outputs, the "
                         "model describes %u inputs and %u outputs", info->name, n_in, n_out, info->n_file_inputs,
                         info->n_outputs);
    }
    if ((rc = check_names(fn, info, s, n_in, n_out)) != ACL_SUCCESS) {
        ort->ReleaseSession(s);
        return rc;
    }
    if (sim_ort_skip_compute()) {
        fprintf(stderr, "ascend-sim: ASCEND_SIM_COMPUTE=skip: model '%s' is NOT computed; its outputs are zeros "
                "(timing only)\n", info->name);
        if (sim_log_enabled)
            sim_log_note("ASCEND_SIM_COMPUTE=skip: model '%s' is not computed, outputs are zeros", info->name);
    }
    *session = s;
    return ACL_SUCCESS;
}

void sim_ort_session_release(void *session)
{
    if (session && ort)
        ort->ReleaseSession(session);
}

static int ort_elem_type(aclDataType t)
{
    switch (t) {
    case ACL_FLOAT: return SIM_ORT_FLOAT;
    case ACL_FLOAT16: return SIM_ORT_FLOAT16;
    case ACL_INT32: return SIM_ORT_INT32;
    case ACL_INT64: return SIM_ORT_INT64;
    default: return SIM_ORT_UINT8;   /* the parser admits no other dtype */
    }
}

/* An OrtValue over `data` with the io's shape at `sym`. */
static OrtStatus *wrap(const sim_model_info *info, const sim_io *io, const uint64_t *sym, void *data,
                       OrtValue **out)
{
    int64_t dims[SIM_MAX_RANK];
    sim_io_dims(info, io, sym, dims);
    size_t bytes = (size_t)sim_shape_elems(dims, io->rank) * aclDataTypeSize(io->dtype);
    return ort->CreateTensorWithDataAsOrtValue(ort_cpu, data, bytes, dims, io->rank, ort_elem_type(io->dtype), out);
}

/* A shape-range output that ONNX Runtime allocated: its shape checked
 * against the model's fixed dims and the buffer's size, then copied in. */
static aclError take_output(const sim_model_info *info, uint32_t k, OrtValue *v, void *dst, size_t cap,
                            int64_t *dims, char *err, size_t errlen)
{
    const sim_io *io = &info->outputs[k];
    OrtTensorTypeAndShapeInfo *shape = NULL;
    size_t rank = 0;
    void *data = NULL;
    OrtStatus *st = ort->GetTensorTypeAndShape(v, &shape);
    if (!st)
        st = ort->GetDimensionsCount(shape, &rank);
    if (!st && rank == io->rank)
        st = ort->GetDimensions(shape, dims, rank);
    if (!st)
        st = ort->GetTensorMutableData(v, &data);
    if (shape)
        ort->ReleaseTensorTypeAndShapeInfo(shape);
    if (st) {
        char msg[512];
        status_text(st, msg, sizeof msg);
        snprintf(err, errlen, "model '%s': output %u ('%s'): ONNX Runtime: %s", info->name, k, io->name, msg);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    if (rank != io->rank) {
        snprintf(err, errlen, "model '%s': output %u ('%s'): ONNX Runtime produced rank %zu, the model describes "
                 "rank %u", info->name, k, io->name, rank, io->rank);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    for (uint32_t d = 0; d < io->rank; d++)
        if (io->dims[d] >= 1 && dims[d] != io->dims[d]) {
            snprintf(err, errlen, "model '%s': output %u ('%s'): ONNX Runtime produced dimension %u = %" PRId64
                     ", the model fixes it at %" PRId64, info->name, k, io->name, d, dims[d], io->dims[d]);
            return ACL_ERROR_RT_MODEL_EXECUTE;
        }
    int empty = 0;   /* a 0 dimension: an empty output, 0 bytes */
    for (uint32_t d = 0; d < io->rank; d++)
        empty |= dims[d] == 0;
    uint64_t elems = empty ? 0 : sim_shape_elems(dims, io->rank);
    uint64_t bytes = elems * aclDataTypeSize(io->dtype);
    if (!empty && elems == 0 && io->rank > 0) {
        snprintf(err, errlen, "model '%s': output %u ('%s'): ONNX Runtime produced a shape above 2^40 bytes",
                 info->name, k, io->name);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    if (bytes > cap) {
        char shape_txt[160];
        size_t used = 0;
        for (uint32_t d = 0; d < io->rank && used < sizeof shape_txt; d++)
            used += (size_t)snprintf(shape_txt + used, sizeof shape_txt - used, d ? ",%" PRId64 : "%" PRId64,
                                     dims[d]);
        snprintf(err, errlen, "model '%s': output %u ('%s'): the output buffer holds %zu bytes, the execution "
                 "produced (%s) = %" PRIu64 " bytes: size the buffer for the largest output the input shapes can "
                 "give", info->name, k, io->name, cap, shape_txt, bytes);
        return ACL_ERROR_GE_FAILURE;
    }
    if (bytes)
        memcpy(dst, data, (size_t)bytes);
    return ACL_SUCCESS;
}

aclError sim_ort_run(void *session, const sim_model_info *info, const uint64_t *sym, void *const *in,
                     void *const *out, const size_t *out_len, int skip, int64_t *out_dims, char *err,
                     size_t errlen)
{
    uint32_t n_in = info->n_file_inputs, n_out = info->n_outputs;
    for (uint32_t k = 0; k < n_out; k++)
        sim_io_dims(info, &info->outputs[k], sym, out_dims + (size_t)k * SIM_MAX_RANK);
    if (skip) {
        for (uint32_t k = 0; k < n_out; k++) {
            memset(out[k], 0, out_len[k]);
            for (uint32_t d = 0; d < info->outputs[k].rank; d++)   /* not computed: no size to report */
                if (out_dims[(size_t)k * SIM_MAX_RANK + d] < 0)
                    out_dims[(size_t)k * SIM_MAX_RANK + d] = 0;
        }
        return ACL_SUCCESS;
    }
    const char **names = calloc((size_t)n_in + n_out, sizeof *names);
    OrtValue **vals = calloc((size_t)n_in + n_out, sizeof *vals);
    if (!names || !vals) {
        free(names);
        free(vals);
        snprintf(err, errlen, "out of host memory executing model '%s'", info->name);
        return ACL_ERROR_RT_MODEL_EXECUTE;
    }
    OrtStatus *st = NULL;
    for (uint32_t i = 0; i < n_in + n_out && !st; i++) {
        const sim_io *io = i < n_in ? &info->inputs[i] : &info->outputs[i - n_in];
        sim_io model_side;   /* a static-AIPP input reaches the graph as the tensor AIPP made */
        names[i] = io->name;
        if (i < n_in && io->aipp) {
            sim_aipp_model_io(info, io, &model_side);
            io = &model_side;
        }
        if (!io->shape_after_run)   /* else vals[i] stays NULL: ONNX Runtime allocates the output */
            st = wrap(info, io, sym, i < n_in ? in[i] : out[i - n_in], &vals[i]);
    }
    if (!st)
        st = ort->Run(session, NULL, names, (const OrtValue *const *)vals, n_in, names + n_in, n_out, vals + n_in);
    aclError rc = ACL_SUCCESS;
    if (st) {
        char msg[768];
        status_text(st, msg, sizeof msg);
        snprintf(err, errlen, "model '%s': ONNX Runtime failed to execute the graph: %s", info->name, msg);
        rc = ACL_ERROR_RT_MODEL_EXECUTE;
    }
    for (uint32_t k = 0; rc == ACL_SUCCESS && k < n_out; k++)
        if (info->outputs[k].shape_after_run)
            rc = take_output(info, k, vals[n_in + k], out[k], out_len[k], out_dims + (size_t)k * SIM_MAX_RANK,
                             err, errlen);
    for (uint32_t i = 0; i < n_in + n_out; i++)
        if (vals[i])
            ort->ReleaseValue(vals[i]);
    free(names);
    free(vals);
    return rc;
}
