/* A stand-in for libcuda.so used by the loader tests on machines without a GPU.
 * It exports a handful of driver entry points (and deliberately not cuMemAlloc_v2, so the tests can
 * see a missing symbol). Built with -DFAKE_STUB it behaves like the toolkit's stub library: every call
 * fails with CUDA_ERROR_STUB_LIBRARY. */
#include <stddef.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
enum { SUCCESS = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, STUB_LIBRARY = 34,
       INVALID_DEVICE = 101 };

#ifdef FAKE_STUB
#define GUARD() return STUB_LIBRARY
#else
#define GUARD() (void)0
#endif

CUresult cuInit(unsigned flags) { GUARD(); return flags == 0 ? SUCCESS : INVALID_VALUE; }
CUresult cuDriverGetVersion(int *v) { GUARD(); *v = 12080; return SUCCESS; }
CUresult cuDeviceGetCount(int *n) { GUARD(); *n = 2; return SUCCESS; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    GUARD();
    if (ordinal < 0 || ordinal > 1) return INVALID_DEVICE;
    *d = ordinal;
    return SUCCESS;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    GUARD();
    const char *n = d == 0 ? "Fake GPU Zero" : "Fake GPU One";
    strncpy(name, n, (size_t)len);
    name[len - 1] = 0;
    return SUCCESS;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    GUARD();
    *bytes = (size_t)(d + 1) << 30;
    return SUCCESS;
}
/* Attributes: 75 = compute capability major, 76 = minor, 16 = multiprocessor count. */
CUresult cuDeviceGetAttribute(int *v, int attribute, CUdevice d) {
    GUARD();
    switch (attribute) {
    case 75: *v = 9 - d; return SUCCESS;
    case 76: *v = 0; return SUCCESS;
    case 16: *v = 132 - d; return SUCCESS;
    default: return INVALID_VALUE;
    }
}
/* The codes this fake describes: each one's name and description. */
static const struct { CUresult code; const char *name, *text; } codes[] = {
    {SUCCESS, "CUDA_SUCCESS", "no error"},
    {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
};
/* The name (or the description, when `text`) of code `e`; INVALID_VALUE and NULL for another code. */
static CUresult describe(CUresult e, const char **s, int text) {
    for (unsigned i = 0; i < sizeof codes / sizeof codes[0]; ++i) {
        if (codes[i].code == e) {
            *s = text ? codes[i].text : codes[i].name;
            return SUCCESS;
        }
    }
    *s = NULL;
    return INVALID_VALUE;
}
CUresult cuGetErrorName(CUresult e, const char **s) { return describe(e, s, 0); }
CUresult cuGetErrorString(CUresult e, const char **s) { return describe(e, s, 1); }

/* Values a newer driver could hand back: an enum value these bindings do not know, and a known one,
 * through out-pointers; a result code these bindings do not know. */
CUresult cuCtxGetCacheConfig(unsigned *config) { GUARD(); *config = 7; return SUCCESS; }
CUresult cuCtxGetSharedMemConfig(unsigned *config) { GUARD(); *config = 1; return SUCCESS; }
CUresult cuCtxGetLimit(size_t *value, int limit) { GUARD(); (void)limit; *value = 1; return 987654; }
