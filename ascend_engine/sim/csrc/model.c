/*
 * model.c -- aclmdl* in the simulator: the model table, load / unload.
 * Execution (sync and on a stream) is in model_exec.c, descriptors in
 * model_desc.c.
 *
 * A loaded model owns one work region (intermediates + float16 scratch, sized
 * for the largest gear) and its weights, both reserved against the device's
 * capacity, unless the caller placed them (aclmdlLoad*WithMem): memory at
 * workPtr / weightPtr is the caller's allocation, already counted by
 * aclrtMalloc, and is not reserved again.  Weights are read-only during
 * execution, so several loads of one model may share one weightPtr (each with
 * its own work region): k model ids, one copy of the weights.
 *
 * A shape-range model has no largest shape: each execution sizes and
 * allocates its own work memory for the shapes it runs at.  Because the work
 * region is shared by every execution of one model id, two executions of it
 * may not overlap: the second fails on the device with 507011, since one
 * model id may not run on two streams at once (docs/simulator.md, "Model
 * instances sharing weights").
 * Two ids sharing weights may run at the same time.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "model.h"

/* ---- model table -------------------------------------------------------------- */

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_model **table;         /* index = id - 1; ids are never reused */
static size_t table_len, table_cap;

void sim_meta_unref(sim_meta *meta)
{
    if (meta && atomic_fetch_sub(&meta->refs, 1) == 1) {
        sim_model_info_free(meta->info);
        free(meta);
    }
}

sim_model *sim_model_get(uint32_t id)
{
    sim_model *m = NULL;
    pthread_mutex_lock(&table_lock);
    if (id >= 1 && id <= table_len && table[id - 1]) {
        m = table[id - 1];
        atomic_fetch_add(&m->refs, 1);
    }
    pthread_mutex_unlock(&table_lock);
    return m;
}

void sim_model_unref(sim_model *m)
{
    if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
        return;
    if (m->reserved)
        sim_device_release_bytes(m->device, m->reserved);
    sim_ort_session_release(m->ort_session);
    if (m->own_work)
        free(m->work);
    if (m->own_weights)
        free(m->weights);
    pthread_mutex_destroy(&m->last_lock);
    sim_meta_unref(m->meta);
    free(atomic_load(&m->spare_plan));
    free(m);
}

int sim_model_last_syms(sim_model *m, uint64_t *out)
{
    pthread_mutex_lock(&m->last_lock);
    int has = m->has_last;
    if (has)
        memcpy(out, m->last_syms, sizeof m->last_syms);
    pthread_mutex_unlock(&m->last_lock);
    return has;
}

aclError sim_model_unknown(const char *fn, uint32_t id)
{
    return sim_error(ACL_ERROR_GE_EXEC_MODEL_ID_INVALID, fn, "modelId %u is not a loaded model", id);
}

/* ---- loading ---------------------------------------------------------------------- */

static aclError read_file(const char *fn, const char *path, unsigned char **out, size_t *size)
{
    if (!path)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "modelPath is NULL");
    FILE *f = fopen(path, "rb");
    if (!f)
        return sim_error(ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, fn, "cannot open model file '%s': %s", path, strerror(errno));
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 65536;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory reading '%s'", path);
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    int err = errno;
    fclose(f);
    if (bad) {
        free(buf);
        return sim_error(ACL_ERROR_GE_EXEC_MODEL_PATH_INVALID, fn, "cannot read model file '%s': %s", path, strerror(err));
    }
    *out = buf;
    *size = len;
    return ACL_SUCCESS;
}

/* Parse, place and register a model.  work/weight pointers NULL: the runtime
 * allocates (and reserves) that part itself. */
static aclError load_model(const char *fn, const void *bytes, size_t size, uint32_t *modelId, void *workPtr,
                           size_t workSize, void *weightPtr, size_t weightSize)
{
    sim_context *ctx;
    aclError rc;
    sim_model_info *info = NULL;
    if ((rc = sim_check_ge_init(fn)) != ACL_SUCCESS)
        return rc;
    if (!modelId)
        return sim_error(ACL_ERROR_INVALID_PARAM, fn, "modelId is NULL");
    if ((rc = sim_need_context(fn, &ctx)) != ACL_SUCCESS)
        return rc;
    if ((rc = sim_model_parse(fn, bytes, size, &info)) != ACL_SUCCESS)
        return rc;

    int32_t dev = ctx->device_id;
    if (workPtr) {
        if (workSize < info->work_size)
            rc = sim_error(ACL_ERROR_GE_PARAM_INVALID, fn, "workSize %zu is smaller than the %" PRIu64
                           " bytes the model needs (aclmdlQuerySize)", workSize, info->work_size);
        else
            rc = sim_mem_check_device(fn, "workPtr", workPtr, workSize, dev);
    }
    if (rc == ACL_SUCCESS && weightPtr) {
        if (weightSize < info->weight_size)
            rc = sim_error(ACL_ERROR_GE_PARAM_INVALID, fn, "weightSize %zu is smaller than the %" PRIu64
                           " bytes the model needs (aclmdlQuerySize)", weightSize, info->weight_size);
        else
            rc = sim_mem_check_device(fn, "weightPtr", weightPtr, weightSize, dev);
    }
    if (rc != ACL_SUCCESS) {
        sim_model_info_free(info);
        return rc;
    }

    sim_model *m = calloc(1, sizeof *m);
    sim_meta *meta = calloc(1, sizeof *meta);
    if (!m || !meta) {
        free(m);
        free(meta);
        sim_model_info_free(info);
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
    }
    atomic_init(&meta->refs, 1);
    meta->info = info;
    m->meta = meta;
    m->device = dev;
    atomic_init(&m->refs, 1);
    atomic_init(&m->busy, 0);
    pthread_mutex_init(&m->last_lock, NULL);

    size_t need = (workPtr ? 0 : (size_t)info->work_size) + (weightPtr ? 0 : (size_t)info->weight_size);
    if (need && (rc = sim_device_reserve_bytes(fn, dev, need)) != ACL_SUCCESS) {
        sim_model_unref(m);
        return rc;
    }
    m->reserved = need;
    if (workPtr) {
        m->work = workPtr;
    } else {
        /* not zeroed: every intermediate is written before it is read; an ONNX model's
         * intermediates live in ONNX Runtime, so its work region is only reserved */
        m->work = malloc(info->work_size && info->executor != SIM_EXEC_ONNX ? info->work_size : 64);
        m->own_work = 1;
    }
    if (weightPtr) {
        m->weights = weightPtr;
    } else {
        m->weights = malloc(info->weight_size ? info->weight_size : 64);
        m->own_weights = 1;
    }
    if (!m->work || !m->weights) {
        sim_model_unref(m);
        return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory for the model's %" PRIu64 " + %" PRIu64
                         " bytes", info->work_size, info->weight_size);
    }
    if (info->weight_size)
        memcpy(m->weights, (const unsigned char *)bytes + info->data_off, info->weight_size);
    if (info->executor == SIM_EXEC_ONNX) {
        /* the weights are the ONNX graph: one ONNX Runtime session per loaded model */
        rc = sim_ort_session_create(fn, info, m->weights, (size_t)info->weight_size, &m->ort_session);
        if (rc != ACL_SUCCESS) {
            sim_model_unref(m);
            return rc;
        }
        m->skip_compute = sim_ort_skip_compute();
    }

    pthread_mutex_lock(&table_lock);
    if (table_len == table_cap) {
        size_t cap = table_cap ? table_cap * 2 : 64;
        sim_model **nt = realloc(table, cap * sizeof *nt);
        if (!nt) {
            pthread_mutex_unlock(&table_lock);
            sim_model_unref(m);
            return sim_error(ACL_ERROR_BAD_ALLOC, fn, "out of host memory");
        }
        table = nt;
        table_cap = cap;
    }
    if (table_len >= UINT32_MAX) {
        pthread_mutex_unlock(&table_lock);
        sim_model_unref(m);
        return sim_error(ACL_ERROR_RT_NO_MODEL_RESOURCE, fn, "no model ids left");
    }
    table[table_len++] = m;
    m->id = (uint32_t)table_len;
    pthread_mutex_unlock(&table_lock);
    *modelId = m->id;
    return ACL_SUCCESS;
}

SIM_EXPORT aclError aclmdlLoadFromMem(const void *model, size_t modelSize, uint32_t *modelId)
{
    SIM_ENTER(aclmdlLoadFromMem);
    aclError rc;
    if (!model || modelSize == 0)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlLoadFromMem", "model is NULL or modelSize is 0");
    else
        rc = load_model("aclmdlLoadFromMem", model, modelSize, modelId, NULL, 0, NULL, 0);
    SIM_RETURN(aclmdlLoadFromMem, rc, "model=%p size=%zu -> id %u", model, modelSize,
               rc == ACL_SUCCESS ? *modelId : 0);
}

SIM_EXPORT aclError aclmdlLoadFromMemWithMem(const void *model, size_t modelSize, uint32_t *modelId, void *workPtr,
                                             size_t workSize, void *weightPtr, size_t weightSize)
{
    SIM_ENTER(aclmdlLoadFromMemWithMem);
    aclError rc;
    if (!model || modelSize == 0)
        rc = sim_error(ACL_ERROR_INVALID_PARAM, "aclmdlLoadFromMemWithMem", "model is NULL or modelSize is 0");
    else
        rc = load_model("aclmdlLoadFromMemWithMem", model, modelSize, modelId, workPtr, workSize, weightPtr,
                        weightSize);
    SIM_RETURN(aclmdlLoadFromMemWithMem, rc, "model=%p size=%zu work=%p/%zu weight=%p/%zu -> id %u", model,
               modelSize, workPtr, workSize, weightPtr, weightSize, rc == ACL_SUCCESS ? *modelId : 0);
}

static aclError load_file(const char *fn, const char *path, uint32_t *modelId, void *workPtr, size_t workSize,
                          void *weightPtr, size_t weightSize)
{
    unsigned char *buf;
    size_t size;
    aclError rc = sim_check_ge_init(fn);
    if (rc == ACL_SUCCESS)
        rc = read_file(fn, path, &buf, &size);
    if (rc != ACL_SUCCESS)
        return rc;
    rc = load_model(fn, buf, size, modelId, workPtr, workSize, weightPtr, weightSize);
    free(buf);
    return rc;
}

SIM_EXPORT aclError aclmdlLoadFromFile(const char *modelPath, uint32_t *modelId)
{
    SIM_ENTER(aclmdlLoadFromFile);
    aclError rc = load_file("aclmdlLoadFromFile", modelPath, modelId, NULL, 0, NULL, 0);
    SIM_RETURN(aclmdlLoadFromFile, rc, "'%s' -> id %u", modelPath ? modelPath : "(null)",
               rc == ACL_SUCCESS ? *modelId : 0);
}

SIM_EXPORT aclError aclmdlLoadFromFileWithMem(const char *modelPath, uint32_t *modelId, void *workPtr,
                                              size_t workSize, void *weightPtr, size_t weightSize)
{
    SIM_ENTER(aclmdlLoadFromFileWithMem);
    aclError rc = load_file("aclmdlLoadFromFileWithMem", modelPath, modelId, workPtr, workSize, weightPtr, weightSize);
    SIM_RETURN(aclmdlLoadFromFileWithMem, rc, "'%s' work=%p/%zu weight=%p/%zu -> id %u",
               modelPath ? modelPath : "(null)", workPtr, workSize, weightPtr, weightSize,
               rc == ACL_SUCCESS ? *modelId : 0);
}

SIM_EXPORT aclError aclmdlQuerySize(const char *fileName, size_t *workSize, size_t *weightSize)
{
    SIM_ENTER(aclmdlQuerySize);
    const char *fn = "aclmdlQuerySize";
    unsigned char *buf;
    size_t size;
    sim_model_info *info;
    aclError rc = sim_check_ge_init(fn);
    if (rc == ACL_SUCCESS && (!workSize || !weightSize))
        rc = sim_error(ACL_ERROR_INVALID_PARAM, fn, "workSize or weightSize is NULL");
    if (rc == ACL_SUCCESS && (rc = read_file(fn, fileName, &buf, &size)) == ACL_SUCCESS) {
        rc = sim_model_parse(fn, buf, size, &info);
        free(buf);
        if (rc == ACL_SUCCESS) {
            *workSize = info->work_size;
            *weightSize = info->weight_size;
            sim_model_info_free(info);
        }
    }
    SIM_RETURN(aclmdlQuerySize, rc, "'%s'", fileName ? fileName : "(null)");
}

SIM_EXPORT aclError aclmdlUnload(uint32_t modelId)
{
    SIM_ENTER(aclmdlUnload);
    aclError rc = sim_check_ge_init("aclmdlUnload");
    sim_model *m = NULL;
    if (rc == ACL_SUCCESS) {
        pthread_mutex_lock(&table_lock);
        if (modelId >= 1 && modelId <= table_len && table[modelId - 1]) {
            m = table[modelId - 1];
            table[modelId - 1] = NULL;
        }
        pthread_mutex_unlock(&table_lock);
        if (!m)
            rc = sim_model_unknown("aclmdlUnload", modelId);
        else
            sim_model_unref(m);   /* queued executions keep it alive until they finish */
    }
    SIM_RETURN(aclmdlUnload, rc, "id %u", modelId);
}
