// (e) A client written the way CANN users write one, for a static model with
// a batch of N images: the benchmark-tool start (saturation mode right after
// aclInit, before any device is set), input files checked against
// aclmdlGetInputSizeByIndex before anything runs, DVPP memory for the input,
// outputs read as size / sizeof(float) and a batch strided by size / batch.
// It links libacl_cblas and libacl_dvpp by name, opens a DVPP channel, and
// shows that what the simulator does not model (CANN BLAS) answers
// ACL_ERROR_API_NOT_SUPPORT with a message.
//
// usage: client_files MODEL INPUT.bin
#include "acl/ops/acl_cblas.h"
#include "acl/ops/acl_dvpp.h"
#include "sample_common.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MODEL INPUT.bin\n", argv[0]);
        return 2;
    }
    CHECK_ACL(aclInit(nullptr));
    CHECK_ACL(aclrtSetDeviceSatMode(ACL_RT_OVERFLOW_MODE_SATURATION));  // before aclrtSetDevice
    CHECK_ACL(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK_ACL(aclrtCreateStream(&stream));

    uint32_t modelId = 0;
    CHECK_ACL(aclmdlLoadFromFile(argv[1], &modelId));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK_TRUE(desc != nullptr);
    CHECK_ACL(aclmdlGetDesc(desc, modelId));

    // The input file must hold exactly what the model takes.
    std::vector<char> file = ReadFile(argv[2]);
    size_t inSize = aclmdlGetInputSizeByIndex(desc, 0);
    if (file.size() != inSize) {
        std::fprintf(stderr, "input file %s holds %zu bytes, the model's input 0 needs %zu\n", argv[2],
                     file.size(), inSize);
        return 3;
    }
    std::printf("input size %zu matches the file\n", inSize);
    void *inDev = nullptr;
    CHECK_ACL(acldvppMalloc(&inDev, inSize));
    CHECK_ACL(aclrtMemcpy(inDev, inSize, file.data(), file.size(), ACL_MEMCPY_HOST_TO_DEVICE));

    aclmdlDataset *input = aclmdlCreateDataset();
    aclDataBuffer *inBuf = aclCreateDataBuffer(inDev, inSize);
    CHECK_ACL(aclmdlAddDatasetBuffer(input, inBuf));
    aclmdlDataset *output = aclmdlCreateDataset();
    size_t outputs = aclmdlGetNumOutputs(desc);
    std::vector<void *> outDev(outputs);
    for (size_t i = 0; i < outputs; i++) {
        size_t size = aclmdlGetOutputSizeByIndex(desc, i);
        CHECK_ACL(aclrtMalloc(&outDev[i], size, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK_ACL(aclmdlAddDatasetBuffer(output, aclCreateDataBuffer(outDev[i], size)));
    }
    CHECK_ACL(aclmdlExecuteAsync(modelId, input, output, stream));
    CHECK_ACL(aclrtSynchronizeStream(stream));

    for (size_t i = 0; i < outputs; i++) {
        aclDataBuffer *buf = aclmdlGetDatasetBuffer(output, i);
        size_t size = aclGetDataBufferSizeV2(buf);
        aclmdlIODims dims;
        CHECK_ACL(aclmdlGetOutputDims(desc, i, &dims));
        CHECK_TRUE(aclmdlGetOutputDataType(desc, i) == ACL_FLOAT);
        void *host = nullptr;
        CHECK_ACL(aclrtMallocHost(&host, size));
        CHECK_ACL(aclrtMemcpy(host, size, aclGetDataBufferAddr(buf), size, ACL_MEMCPY_DEVICE_TO_HOST));
        const float *values = static_cast<const float *>(host);
        size_t count = size / sizeof(float);
        size_t batch = static_cast<size_t>(dims.dims[0]);
        size_t stride = size / batch / sizeof(float);  // one image's outputs
        std::printf("output %s: %zu floats, batch %zu\n", aclmdlGetOutputNameByIndex(desc, i), count, batch);
        for (size_t b = 0; b < batch; b++) {
            std::printf("row %zu:", b);
            for (size_t k = 0; k < stride; k++)
                std::printf(" %.7g", values[b * stride + k]);
            std::printf("\n");
        }
        CHECK_ACL(aclrtFreeHost(host));
    }

    acldvppChannelDesc *channel = acldvppCreateChannelDesc();
    if (!channel) {
        std::printf("acldvppCreateChannelDesc -> NULL: %s\n", aclGetRecentErrMsg());
        return 1;
    }
    CHECK_ACL(acldvppCreateChannel(channel));
    std::printf("acldvppCreateChannel -> channel %llu\n",
                static_cast<unsigned long long>(acldvppGetChannelDescChannelId(channel)));
    CHECK_ACL(acldvppDestroyChannel(channel));
    CHECK_ACL(acldvppDestroyChannelDesc(channel));
    // Not simulated: the answer is a clear code and message, not a crash.
    aclError blas = aclblasGemmEx(ACL_TRANS_N, ACL_TRANS_N, ACL_TRANS_N, 1, 1, 1, nullptr, nullptr, 1, ACL_FLOAT,
                                  nullptr, 1, ACL_FLOAT, nullptr, nullptr, 1, ACL_FLOAT,
                                  ACL_COMPUTE_HIGH_PRECISION, stream);
    std::printf("aclblasGemmEx -> %d: %s\n", blas, aclGetRecentErrMsg());

    aclDestroyDataBuffer(inBuf);
    for (size_t i = 0; i < outputs; i++) {
        aclDestroyDataBuffer(aclmdlGetDatasetBuffer(output, i));
        CHECK_ACL(aclrtFree(outDev[i]));
    }
    CHECK_ACL(aclmdlDestroyDataset(input));
    CHECK_ACL(aclmdlDestroyDataset(output));
    CHECK_ACL(acldvppFree(inDev));
    CHECK_ACL(aclmdlDestroyDesc(desc));
    CHECK_ACL(aclmdlUnload(modelId));
    CHECK_ACL(aclrtDestroyStream(stream));
    CHECK_ACL(aclrtResetDevice(0));
    CHECK_ACL(aclFinalize());
    std::printf("client_files: OK\n");
    return 0;
}
