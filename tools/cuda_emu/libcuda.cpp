// libcuda.cpp: the part of the CUDA driver API that ferrotorch (through cudarc) calls, run on
// the CPU. One emulated device, "cuda:0". Device memory is host memory (each allocation ends
// at a guard page, so a kernel that writes past its buffer faults); every call is synchronous,
// so streams and events only keep time. Kernels come from the registry compiled in beside
// this file; a module "loaded" from the fake NVRTC's PTX resolves names there.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "ft_emu_runtime.h"

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void* CUcontext;
typedef void* CUstream;
typedef void* CUmodule;
typedef void* CUfunction;

enum : int {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

namespace {

std::mutex g_lock;  // one launch or copy at a time (the device is this one CPU thread)
int g_ctx_token;    // the address is the primary context's handle
constexpr size_t kTotalMemory = 8ull << 30;

struct Allocation {
    void* map_base;
    size_t map_len;
    size_t size;
};
std::map<CUdeviceptr, Allocation> g_allocs;
size_t g_in_use = 0;
// Calls counted for tests of the caching allocator (ft_emu_counters).
unsigned long long g_alloc_calls = 0, g_free_calls = 0, g_launches = 0;

struct Event {
    double ms = 0;
    bool recorded = false;
};

double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Is [p, p + n) inside one live allocation? (Copies check this; kernels rely on the guard page.)
bool inside_allocation(CUdeviceptr p, size_t n) {
    auto it = g_allocs.upper_bound(p);
    if (it == g_allocs.begin()) return false;
    --it;
    return p >= it->first && p + n <= it->first + it->second.size;
}

CUresult check_range(CUdeviceptr p, size_t n, const char* what) {
    if (n == 0 || inside_allocation(p, n)) return CUDA_SUCCESS;
    std::fprintf(stderr, "ft_emu: %s of %zu bytes at 0x%llx is outside every allocation\n", what,
                 n, p);
    return CUDA_ERROR_INVALID_VALUE;
}

int attribute_value(int attrib) {
    switch (attrib) {
        case 1: return 1024;     // MAX_THREADS_PER_BLOCK
        case 2: return 1024;     // MAX_BLOCK_DIM_X
        case 3: return 1024;     // MAX_BLOCK_DIM_Y
        case 4: return 64;       // MAX_BLOCK_DIM_Z
        case 5: return 2147483647;  // MAX_GRID_DIM_X
        case 6: return 65535;    // MAX_GRID_DIM_Y
        case 7: return 65535;    // MAX_GRID_DIM_Z
        case 8: return 49152;    // MAX_SHARED_MEMORY_PER_BLOCK
        case 10: return 32;      // WARP_SIZE
        case 16: return 16;      // MULTIPROCESSOR_COUNT
        case 75: return 9;       // COMPUTE_CAPABILITY_MAJOR
        case 76: return 0;       // COMPUTE_CAPABILITY_MINOR
        case 97: return 227 * 1024;  // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
        case 115: return 0;      // MEMORY_POOLS_SUPPORTED: cudarc then uses cuMemAlloc
        default: return 0;
    }
}

}  // namespace

#define FT_API extern "C" __attribute__((visibility("default")))

FT_API CUresult cuInit(unsigned) { return CUDA_SUCCESS; }
FT_API CUresult cuDriverGetVersion(int* v) {
    *v = 12090;
    return CUDA_SUCCESS;
}
FT_API CUresult cuDeviceGetCount(int* n) {
    *n = 1;
    return CUDA_SUCCESS;
}
FT_API CUresult cuDeviceGet(CUdevice* d, int ordinal) {
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return CUDA_SUCCESS;
}
FT_API CUresult cuDeviceGetName(char* name, int len, CUdevice) {
    std::snprintf(name, (size_t)len, "ferrotorch CUDA emulator (CPU)");
    return CUDA_SUCCESS;
}
FT_API CUresult cuDeviceGetAttribute(int* v, int attrib, CUdevice) {
    *v = attribute_value(attrib);
    return CUDA_SUCCESS;
}
FT_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice) {
    *bytes = kTotalMemory;
    return CUDA_SUCCESS;
}
FT_API CUresult cuDeviceGetUuid(unsigned char* uuid, CUdevice) {
    std::memset(uuid, 0x42, 16);
    return CUDA_SUCCESS;
}
FT_API CUresult cuDeviceGetUuid_v2(unsigned char* uuid, CUdevice d) { return cuDeviceGetUuid(uuid, d); }
FT_API CUresult cuDeviceCanAccessPeer(int* can, CUdevice, CUdevice) {
    *can = 0;
    return CUDA_SUCCESS;
}
FT_API CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
    *c = &g_ctx_token;
    return CUDA_SUCCESS;
}
FT_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice) { return CUDA_SUCCESS; }
FT_API CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
FT_API CUresult cuCtxGetCurrent(CUcontext* c) {
    *c = &g_ctx_token;
    return CUDA_SUCCESS;
}
FT_API CUresult cuCtxPushCurrent_v2(CUcontext) { return CUDA_SUCCESS; }
FT_API CUresult cuCtxPopCurrent_v2(CUcontext* c) {
    if (c) *c = &g_ctx_token;
    return CUDA_SUCCESS;
}
FT_API CUresult cuCtxGetDevice(CUdevice* d) {
    *d = 0;
    return CUDA_SUCCESS;
}
FT_API CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }

// ---------------------------------------------------------------------------- streams, events
FT_API CUresult cuStreamCreate(CUstream* s, unsigned) {
    *s = new int(0);
    return CUDA_SUCCESS;
}
FT_API CUresult cuStreamCreateWithPriority(CUstream* s, unsigned f, int) { return cuStreamCreate(s, f); }
FT_API CUresult cuStreamDestroy_v2(CUstream s) {
    delete static_cast<int*>(s);
    return CUDA_SUCCESS;
}
FT_API CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
FT_API CUresult cuStreamQuery(CUstream) { return CUDA_SUCCESS; }
FT_API CUresult cuStreamWaitEvent(CUstream, void*, unsigned) { return CUDA_SUCCESS; }
FT_API CUresult cuEventCreate(void** e, unsigned) {
    *e = new Event();
    return CUDA_SUCCESS;
}
FT_API CUresult cuEventDestroy_v2(void* e) {
    delete static_cast<Event*>(e);
    return CUDA_SUCCESS;
}
FT_API CUresult cuEventRecord(void* e, CUstream) {
    auto* ev = static_cast<Event*>(e);
    ev->ms = now_ms();
    ev->recorded = true;
    return CUDA_SUCCESS;
}
FT_API CUresult cuEventRecordWithFlags(void* e, CUstream s, unsigned) { return cuEventRecord(e, s); }
FT_API CUresult cuEventSynchronize(void*) { return CUDA_SUCCESS; }
FT_API CUresult cuEventQuery(void*) { return CUDA_SUCCESS; }
FT_API CUresult cuEventElapsedTime(float* ms, void* a, void* b) {
    auto* ea = static_cast<Event*>(a);
    auto* eb = static_cast<Event*>(b);
    if (!ea->recorded || !eb->recorded) return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)(eb->ms - ea->ms);
    return CUDA_SUCCESS;
}
FT_API CUresult cuEventElapsedTime_v2(float* ms, void* a, void* b) { return cuEventElapsedTime(ms, a, b); }

// ---------------------------------------------------------------------------- memory
FT_API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t size) {
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(g_lock);
    if (g_in_use + size > kTotalMemory) return CUDA_ERROR_OUT_OF_MEMORY;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t body = (size + page - 1) / page * page;
    void* m = mmap(nullptr, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                   0);
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    mprotect((char*)m + body, page, PROT_NONE);
    // End the buffer as close to the guard page as 256-byte alignment (cudaMalloc's) allows.
    uintptr_t start = ((uintptr_t)m + body - size) & ~(uintptr_t)255;
    std::memset((void*)start, 0xff, size);  // fresh device memory is not zeroed
    *p = (CUdeviceptr)start;
    g_allocs[*p] = Allocation{m, body + page, size};
    g_in_use += size;
    ++g_alloc_calls;
    return CUDA_SUCCESS;
}
FT_API CUresult cuMemFree_v2(CUdeviceptr p) {
    std::lock_guard<std::mutex> g(g_lock);
    auto it = g_allocs.find(p);
    if (it == g_allocs.end()) {
        std::fprintf(stderr, "ft_emu: cuMemFree of 0x%llx, which is not an allocation\n", p);
        return CUDA_ERROR_INVALID_VALUE;
    }
    munmap(it->second.map_base, it->second.map_len);
    g_in_use -= it->second.size;
    g_allocs.erase(it);
    ++g_free_calls;
    return CUDA_SUCCESS;
}
FT_API CUresult cuMemAllocAsync(CUdeviceptr* p, size_t size, CUstream) { return cuMemAlloc_v2(p, size); }
FT_API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) { return cuMemFree_v2(p); }
FT_API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
    std::lock_guard<std::mutex> g(g_lock);
    *free_bytes = kTotalMemory - g_in_use;
    *total = kTotalMemory;
    return CUDA_SUCCESS;
}

FT_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
    std::lock_guard<std::mutex> g(g_lock);
    if (CUresult r = check_range(dst, n, "host-to-device copy")) return r;
    if (n) std::memcpy((void*)dst, src, n);
    return CUDA_SUCCESS;
}
FT_API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
    std::lock_guard<std::mutex> g(g_lock);
    if (CUresult r = check_range(src, n, "device-to-host copy")) return r;
    if (n) std::memcpy(dst, (const void*)src, n);
    return CUDA_SUCCESS;
}
FT_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    std::lock_guard<std::mutex> g(g_lock);
    if (CUresult r = check_range(src, n, "device-to-device copy (source)")) return r;
    if (CUresult r = check_range(dst, n, "device-to-device copy (destination)")) return r;
    if (n) std::memmove((void*)dst, (const void*)src, n);
    return CUDA_SUCCESS;
}
FT_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* s, size_t n, CUstream) {
    return cuMemcpyHtoD_v2(d, s, n);
}
FT_API CUresult cuMemcpyDtoHAsync_v2(void* d, CUdeviceptr s, size_t n, CUstream) {
    return cuMemcpyDtoH_v2(d, s, n);
}
FT_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream) {
    return cuMemcpyDtoD_v2(d, s, n);
}
FT_API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
    std::lock_guard<std::mutex> g(g_lock);
    if (CUresult r = check_range(d, n, "memset")) return r;
    if (n) std::memset((void*)d, v, n);
    return CUDA_SUCCESS;
}
FT_API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream) {
    return cuMemsetD8_v2(d, v, n);
}
FT_API CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned v, size_t n) {
    std::lock_guard<std::mutex> g(g_lock);
    if (CUresult r = check_range(d, n * 4, "memset")) return r;
    for (size_t i = 0; i < n; ++i) std::memcpy((char*)d + 4 * i, &v, 4);
    return CUDA_SUCCESS;
}
FT_API CUresult cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream) {
    return cuMemsetD32_v2(d, v, n);
}
FT_API CUresult cuMemHostAlloc(void** p, size_t n, unsigned) {
    *p = std::malloc(n ? n : 1);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
FT_API CUresult cuMemAllocHost_v2(void** p, size_t n) { return cuMemHostAlloc(p, n, 0); }
FT_API CUresult cuMemFreeHost(void* p) {
    std::free(p);
    return CUDA_SUCCESS;
}
FT_API CUresult cuMemHostRegister_v2(void*, size_t, unsigned) { return CUDA_SUCCESS; }
FT_API CUresult cuMemHostUnregister(void*) { return CUDA_SUCCESS; }
FT_API CUresult cuPointerGetAttribute(void* data, int attrib, CUdeviceptr p) {
    std::lock_guard<std::mutex> g(g_lock);
    const bool device = inside_allocation(p, 1);
    switch (attrib) {
        case 1:  // CONTEXT
            *(CUcontext*)data = &g_ctx_token;
            return device ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        case 2:  // MEMORY_TYPE: 1 host, 2 device
            *(unsigned*)data = device ? 2u : 1u;
            return CUDA_SUCCESS;
        case 3:  // DEVICE_POINTER
            *(CUdeviceptr*)data = p;
            return CUDA_SUCCESS;
        case 9:  // DEVICE_ORDINAL
            *(int*)data = 0;
            return device ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
    }
}

// ---------------------------------------------------------------------------- modules, launches
FT_API CUresult cuModuleLoadData(CUmodule* m, const void* image) {
    // The fake NVRTC's PTX starts with this marker; anything else is real PTX we cannot run.
    if (std::strncmp((const char*)image, "// ferrotorch-emu", 17) != 0) {
        std::fprintf(stderr, "ft_emu: cuModuleLoadData got PTX that the emulator did not make "
                             "(a kernel cache from a real GPU?)\n");
        return CUDA_ERROR_INVALID_VALUE;
    }
    *m = &g_ctx_token;
    return CUDA_SUCCESS;
}
FT_API CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned, void*, void*) {
    return cuModuleLoadData(m, image);
}
FT_API CUresult cuModuleUnload(CUmodule) { return CUDA_SUCCESS; }
FT_API CUresult cuModuleGetFunction(CUfunction* f, CUmodule, const char* name) {
    size_t n = 0;
    const ft_emu::KernelEntry* k = ft_emu::kernels(&n);
    for (size_t i = 0; i < n; ++i) {
        if (std::strcmp(k[i].name, name) == 0) {
            *f = (void*)&k[i];
            return CUDA_SUCCESS;
        }
    }
    std::fprintf(stderr, "ft_emu: no kernel named %s\n", name);
    return CUDA_ERROR_NOT_FOUND;
}
FT_API CUresult cuFuncGetAttribute(int* v, int attrib, CUfunction) {
    *v = attrib == 0 ? 1024 : 0;  // MAX_THREADS_PER_BLOCK
    return CUDA_SUCCESS;
}
FT_API CUresult cuFuncSetAttribute(CUfunction, int, int) { return CUDA_SUCCESS; }
FT_API CUresult cuFuncSetCacheConfig(CUfunction, int) { return CUDA_SUCCESS; }

FT_API CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned smem, CUstream, void** params,
                               void** extra) {
    if (extra != nullptr || f == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const auto* k = static_cast<const ft_emu::KernelEntry*>(f);
    if (smem > 227u * 1024u) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> g(g_lock);
    ++g_launches;
    const std::string err =
        ft_emu::run_launch(k->fn, params, dim3{gx, gy, gz}, dim3{bx, by, bz}, smem);
    if (!err.empty()) {
        std::fprintf(stderr, "ft_emu: launch of %s (%s) grid (%u,%u,%u) block (%u,%u,%u): %s\n",
                     k->name, k->file, gx, gy, gz, bx, by, bz, err.c_str());
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------- errors
FT_API CUresult cuGetErrorString(CUresult r, const char** s) {
    switch (r) {
        case CUDA_SUCCESS: *s = "no error"; break;
        case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
        case CUDA_ERROR_OUT_OF_MEMORY: *s = "out of memory"; break;
        case CUDA_ERROR_NOT_FOUND: *s = "named symbol not found"; break;
        case CUDA_ERROR_LAUNCH_FAILED: *s = "unspecified launch failure (emulator)"; break;
        default: *s = "emulated CUDA error"; break;
    }
    return CUDA_SUCCESS;
}
FT_API CUresult cuGetErrorName(CUresult r, const char** s) {
    switch (r) {
        case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
        case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
        case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
        case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
        case CUDA_ERROR_LAUNCH_FAILED: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
        default: *s = "CUDA_ERROR_UNKNOWN"; break;
    }
    return CUDA_SUCCESS;
}

// Not CUDA: the emulator's call counters (cuMemAlloc, cuMemFree, cuLaunchKernel), for tests.
FT_API void ft_emu_counters(unsigned long long out[3]) {
    std::lock_guard<std::mutex> g(g_lock);
    out[0] = g_alloc_calls;
    out[1] = g_free_calls;
    out[2] = g_launches;
}
