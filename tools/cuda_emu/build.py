#!/usr/bin/env python3
"""Build the CPU CUDA emulator: fake libcuda.so / libnvrtc.so / libcublas.so /
libcusolver.so in OUT_DIR.

Every cuda_kernels/*.cu is compiled as C++ (tools/cuda_emu/ft_emu.h stands in for the device),
its `extern "C" __global__` kernels are found by preprocessing, and a registry maps each name
to a trampoline that unpacks cuLaunchKernel's argument array. Usage:

    python3 tools/cuda_emu/build.py [OUT_DIR]      (default: target/cuda_emu)

Only g++ (x86-64 Linux) is needed. Rebuilds only what changed.
"""

import concurrent.futures
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EMU = ROOT / "tools" / "cuda_emu"
KERNELS = ROOT / "cuda_kernels"
CXX = os.environ.get("CXX", "g++")
FLAGS = ["-std=c++17", "-fPIC", "-g0", "-w", "-fno-strict-aliasing",
         f"-I{EMU / 'include'}", f"-I{EMU}", f"-I{KERNELS}"]
OPT = ["-O1"]
LIB_OPT = {"libcublas.so": ["-O2"], "libcusolver.so": ["-O2"]}

# `extern __shared__ [__align__(n)] T name[];` -> a pointer to the launch's dynamic shared memory.
EXTERN_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\d+\)\s+)?([A-Za-z_][\w\s]*?)\s+(\w+)\s*\[\s*\]\s*;")
KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')


def newer(target: Path, *sources: Path) -> bool:
    return not target.exists() or any(s.stat().st_mtime > target.stat().st_mtime for s in sources)


def generate(cu: Path, gen: Path) -> Path:
    """The C++ translation unit for one kernel file (kernels inside an unnamed namespace, so
    file-local helpers of different files cannot collide at link time)."""
    src = EXTERN_SHARED.sub(r"\1* \2 = (\1*)ft_emu::dyn_smem;", cu.read_text())
    body = (f'#include "ft_emu.h"\n#include "ft_emu_runtime.h"\nnamespace {{\n'
            f'#line 1 "{cu.name}"\n{src}\n}}  // namespace\n')
    tu = gen / (cu.stem + ".cpp")
    if not tu.exists() or tu.read_text() != body:
        tu.write_text(body)
    return tu


def kernel_names(tu: Path) -> list[str]:
    pre = subprocess.run([CXX, "-E", "-DFT_EMU_SCAN", *FLAGS, str(tu)], check=True,
                         capture_output=True, text=True).stdout
    return KERNEL.findall(pre)


def compile_unit(tu: Path, names: list[str], cu_name: str, obj: Path) -> Path:
    full = tu.with_suffix(".reg.cpp")
    sym = "ft_emu_kernels_" + re.sub(r"\W", "_", tu.stem)
    entries = ",\n".join(f'    {{"{cu_name}", "{n}", &ft_emu::trampoline<&{n}>}}' for n in names)
    text = (f'#include "{tu.name}"\n'
            f"extern const ft_emu::KernelEntry {sym}[] = {{\n{entries}\n}};\n"
            f"extern const std::size_t {sym}_n = {len(names)};\n")
    if not full.exists() or full.read_text() != text:
        full.write_text(text)
    deps = [full, tu, KERNELS / "common.cuh", EMU / "ft_emu.h", EMU / "ft_emu_runtime.h"]
    if newer(obj, *deps):
        subprocess.run([CXX, *FLAGS, *OPT, "-c", str(full), "-o", str(obj)], check=True)
    return obj


def link_lib(out: Path, lib: str, srcs: list[Path]) -> Path:
    """Build one shared library from sources (also used alone by test_fake_linalg.py)."""
    target = out / lib
    if newer(target, *srcs, EMU / "ft_emu.h", EMU / "ft_emu_runtime.h"):
        opt = LIB_OPT.get(lib, OPT)
        subprocess.run([CXX, *FLAGS, *opt, "-shared", f"-Wl,-soname,{lib}", "-o", str(target),
                        *map(str, srcs), "-lpthread"], check=True)
    return target


def main() -> int:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "cuda_emu"
    gen = out / "gen"
    gen.mkdir(parents=True, exist_ok=True)
    files = sorted(KERNELS.glob("*.cu"))
    units = [(cu, generate(cu, gen)) for cu in files]
    jobs = max(1, min(len(units), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        names = list(pool.map(lambda u: kernel_names(u[1]), units))
        seen: dict[str, str] = {}
        for (cu, _), ns in zip(units, names):
            for n in ns:
                if n in seen:
                    raise SystemExit(f"kernel {n} is defined in both {seen[n]} and {cu.name}")
                seen[n] = cu.name
        objs = list(pool.map(
            lambda a: compile_unit(a[0][1], a[1], a[0][0].name, gen / (a[0][1].stem + ".o")),
            zip(units, names)))
    syms = ["ft_emu_kernels_" + re.sub(r"\W", "_", tu.stem) for _, tu in units]
    reg = gen / "registry.cpp"
    decls = "".join(f"extern const ft_emu::KernelEntry {s}[];\nextern const std::size_t {s}_n;\n"
                    for s in syms)
    adds = "".join(f"        v.insert(v.end(), {s}, {s} + {s}_n);\n" for s in syms)
    reg.write_text(
        '#include <vector>\n#include "ft_emu_runtime.h"\n' + decls +
        "namespace ft_emu {\nconst KernelEntry* kernels(std::size_t* count) {\n"
        "    static const std::vector<KernelEntry> all = [] {\n"
        "        std::vector<KernelEntry> v;\n" + adds +
        "        return v;\n    }();\n    *count = all.size();\n    return all.data();\n}\n}\n")
    libs = {
        "libcuda.so": [EMU / "libcuda.cpp", EMU / "fibers.cpp", reg, *objs],
        "libnvrtc.so": [EMU / "libnvrtc.cpp"],
        "libcublas.so": [EMU / "libcublas.cpp"],
        "libcusolver.so": [EMU / "libcusolver.cpp"],
    }
    for lib, srcs in libs.items():
        link_lib(out, lib, srcs)
    print(f"CUDA emulator: {len(seen)} kernels from {len(files)} files in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
