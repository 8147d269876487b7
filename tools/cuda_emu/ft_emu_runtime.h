// ft_emu_runtime.h: the kernel registry and launch entry shared by the generated kernel
// objects and the fake driver (libcuda.cpp).
#pragma once
#include <cstddef>
#include <string>
#include <utility>

#include "ft_emu.h"

namespace ft_emu {

// A kernel as the driver sees it: cuLaunchKernel's `kernelParams` (one pointer per argument).
using KernelFn = void (*)(void**);

struct KernelEntry {
    const char* file;  // "reduce.cu"
    const char* name;  // "sum_dim_f32"
    KernelFn fn;
};

// Unpacks kernelParams into a call of F, using F's own parameter types.
template <typename Sig> struct Unpack;
template <typename... A> struct Unpack<void (*)(A...)> {
    static constexpr std::size_t arity = sizeof...(A);
    template <auto F, std::size_t... I> static void call(void** p, std::index_sequence<I...>) {
        F(*static_cast<std::remove_reference_t<A>*>(p[I])...);
    }
};
template <auto F> void trampoline(void** p) {
    using U = Unpack<decltype(F)>;
    U::template call<F>(p, std::make_index_sequence<U::arity>{});
}

// Runs the launch to completion; returns "" or why it failed.
std::string run_launch(KernelFn fn, void** params, dim3 grid, dim3 block, unsigned smem_bytes);

// Every kernel of every file (registry.cpp, generated).
const KernelEntry* kernels(std::size_t* count);

}  // namespace ft_emu
