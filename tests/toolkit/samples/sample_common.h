// Shared helpers of the sample programs: error checks that print AscendCL's
// own explanation, file reading, and the top-k report.
#ifndef AE_SAMPLE_COMMON_H
#define AE_SAMPLE_COMMON_H

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "acl/acl.h"

#define CHECK_ACL(call)                                                                       \
    do {                                                                                      \
        aclError ret_ = (call);                                                               \
        if (ret_ != ACL_SUCCESS) {                                                            \
            const char *msg_ = aclGetRecentErrMsg();                                          \
            std::fprintf(stderr, "%s:%d: %s failed with %d: %s\n", __FILE__, __LINE__, #call, \
                         ret_, msg_ ? msg_ : "(no message)");                                \
            std::exit(1);                                                                     \
        }                                                                                     \
    } while (0)

#define CHECK_TRUE(cond)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            const char *msg_ = aclGetRecentErrMsg();                                          \
            std::fprintf(stderr, "%s:%d: check failed: %s (recent error: %s)\n", __FILE__,   \
                         __LINE__, #cond, msg_ ? msg_ : "none");                              \
            std::exit(1);                                                                     \
        }                                                                                     \
    } while (0)

inline std::vector<char> ReadFile(const char *path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "cannot open %s\n", path);
        std::exit(1);
    }
    return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Prints "<label> top5: c0:s0 c1:s1 ..." for the k best scores.
inline void PrintTopK(const char *label, const float *scores, size_t n, size_t k)
{
    std::vector<size_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0);
    k = std::min(k, n);
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                      [scores](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::printf("%s top%zu:", label, k);
    for (size_t i = 0; i < k; i++)
        std::printf(" %zu:%.6f", idx[i], scores[idx[i]]);
    std::printf("\n");
}

inline std::string DimsToString(const aclmdlIODims &d)
{
    std::string s;
    for (size_t i = 0; i < d.dimCount; i++)
        s += (i ? "x" : "") + std::to_string(d.dims[i]);
    return s;
}

#endif
