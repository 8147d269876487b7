// libnvrtc.cpp: NVRTC for the CPU emulator. The kernels are already compiled into the fake
// libcuda, so "compiling" returns a marker PTX that the fake cuModuleLoadData accepts. The
// version (99.0) keeps these entries apart from a real NVRTC's in ferrotorch's kernel cache.
#include <cstring>
#include <string>

typedef int nvrtcResult;
#define FT_API extern "C" __attribute__((visibility("default")))

namespace {
struct Program {
    std::string name, ptx;
};
}  // namespace

FT_API nvrtcResult nvrtcVersion(int* major, int* minor) {
    *major = 99;
    *minor = 0;
    return 0;
}
FT_API const char* nvrtcGetErrorString(nvrtcResult r) {
    return r == 0 ? "NVRTC_SUCCESS" : "NVRTC_ERROR (emulator)";
}
FT_API nvrtcResult nvrtcCreateProgram(void** prog, const char*, const char* name, int,
                                      const char* const*, const char* const*) {
    auto* p = new Program();
    p->name = name ? name : "kernel.cu";
    *prog = p;
    return 0;
}
FT_API nvrtcResult nvrtcDestroyProgram(void** prog) {
    delete static_cast<Program*>(*prog);
    *prog = nullptr;
    return 0;
}
FT_API nvrtcResult nvrtcCompileProgram(void* prog, int, const char* const*) {
    auto* p = static_cast<Program*>(prog);
    p->ptx = "// ferrotorch-emu " + p->name + "\n.visible .entry emulated()\n";
    return 0;
}
FT_API nvrtcResult nvrtcGetPTXSize(void* prog, size_t* n) {
    *n = static_cast<Program*>(prog)->ptx.size() + 1;
    return 0;
}
FT_API nvrtcResult nvrtcGetPTX(void* prog, char* out) {
    const std::string& s = static_cast<Program*>(prog)->ptx;
    std::memcpy(out, s.c_str(), s.size() + 1);
    return 0;
}
FT_API nvrtcResult nvrtcGetProgramLogSize(void*, size_t* n) {
    *n = 1;
    return 0;
}
FT_API nvrtcResult nvrtcGetProgramLog(void*, char* out) {
    out[0] = 0;
    return 0;
}
