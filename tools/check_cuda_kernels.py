#!/usr/bin/env python3
"""Compile every cuda_kernels/*.cu with NVRTC (no GPU, no driver needed) and check the manifest.

NVRTC comes from PyPI: ``nvidia-cuda-nvrtc-cu12==12.9.*`` (libnvrtc.so.12 in
site-packages/nvidia/cuda_nvrtc/lib) and the fp16/bf16 headers from
``nvidia-cuda-runtime-cu12==12.9.*`` (site-packages/nvidia/cuda_runtime/include).
Override with ``FERROTORCH_NVRTC=/path/libnvrtc.so.12`` and ``FERROTORCH_CUDA_INCLUDE=/dir``.

For each file and each arch (default sm_80 and sm_90) it compiles with ``-arch=sm_XX``
(SASS, fetched with nvrtcGetCUBIN, so ptxas runs and register/assembly errors surface). The
PTX of the same compile (NVRTC 12.9 keeps it; otherwise the file is compiled again for
``compute_XX``) gives the kernel names from its ``.entry`` lines; every name in
cuda_kernels/manifest.txt must be defined by some file.

The headers in cuda_kernels/ (*.cuh) are passed to NVRTC as header sources, exactly as the
Rust side does at run time (include_str! + nvrtcCreateProgram headers).

Usage: python tools/check_cuda_kernels.py [--arch sm_80 --arch sm_90] [-v] [FILE.cu ...]
Exit status 0 when every file compiles for every arch and the manifest is satisfied.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_DIR = ROOT / "cuda_kernels"
MANIFEST = KERNEL_DIR / "manifest.txt"
DEFAULT_ARCHES = ("sm_80", "sm_90")
# Options shared with the Rust side (see cuda_kernels/README.md, "Compiling").
BASE_OPTIONS = ("--std=c++17", "-default-device")


class NvrtcNotFound(RuntimeError):
    """NVRTC (or the CUDA headers it needs) is not installed."""


def _site_dirs() -> list[Path]:
    import site
    import sysconfig

    dirs = [Path(p) for p in sys.path if p]
    try:
        dirs += [Path(p) for p in site.getsitepackages()]
    except AttributeError:  # pragma: no cover - virtualenv without getsitepackages
        pass
    dirs.append(Path(sysconfig.get_paths()["purelib"]))
    seen, out = set(), []
    for d in dirs:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def find_nvrtc() -> Path:
    env = os.environ.get("FERROTORCH_NVRTC")
    if env:
        if Path(env).is_file():
            return Path(env)
        raise NvrtcNotFound(f"FERROTORCH_NVRTC={env} is not a file")
    for d in _site_dirs():
        cand = d / "nvidia" / "cuda_nvrtc" / "lib" / "libnvrtc.so.12"
        if cand.is_file():
            return cand
    raise NvrtcNotFound(
        "libnvrtc.so.12 not found: pip install nvidia-cuda-nvrtc-cu12==12.9.86 "
        "nvidia-cuda-runtime-cu12==12.9.*"
    )


def find_cuda_include() -> Path:
    env = os.environ.get("FERROTORCH_CUDA_INCLUDE")
    if env:
        if (Path(env) / "cuda_fp16.h").is_file():
            return Path(env)
        raise NvrtcNotFound(f"FERROTORCH_CUDA_INCLUDE={env} has no cuda_fp16.h")
    for d in _site_dirs():
        cand = d / "nvidia" / "cuda_runtime" / "include"
        if (cand / "cuda_fp16.h").is_file() and (cand / "cuda_bf16.h").is_file():
            return cand
    raise NvrtcNotFound(
        "cuda_fp16.h/cuda_bf16.h not found: pip install nvidia-cuda-runtime-cu12==12.9.*"
    )


class Nvrtc:
    """The handful of NVRTC entry points we need, through ctypes."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        lib = self.lib
        lib.nvrtcGetErrorString.restype = ctypes.c_char_p
        lib.nvrtcCreateProgram.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_char_p),
        ]
        lib.nvrtcCompileProgram.argtypes = [
            ctypes.c_void_p,
            ctypes.c_int,
            ctypes.POINTER(ctypes.c_char_p),
        ]
        for fn in ("nvrtcGetProgramLogSize", "nvrtcGetPTXSize", "nvrtcGetCUBINSize"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        for fn in ("nvrtcGetProgramLog", "nvrtcGetPTX", "nvrtcGetCUBIN"):
            getattr(lib, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nvrtcDestroyProgram.argtypes = [ctypes.POINTER(ctypes.c_void_p)]

    def version(self) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        return major.value, minor.value

    def _err(self, code: int) -> str:
        return self.lib.nvrtcGetErrorString(code).decode()

    def _get(self, prog, size_fn, get_fn) -> bytes | None:
        size = ctypes.c_size_t()
        if getattr(self.lib, size_fn)(prog, ctypes.byref(size)) != 0 or size.value == 0:
            return None
        buf = ctypes.create_string_buffer(size.value)
        if getattr(self.lib, get_fn)(prog, buf) != 0:
            return None
        return buf.raw

    def compile(
        self, source: str, name: str, options: list[str], headers: dict[str, str]
    ) -> tuple[bool, str, bytes | None, bytes | None]:
        """Return (ok, log, ptx, cubin)."""
        prog = ctypes.c_void_p()
        n = len(headers)
        hdr_src = (ctypes.c_char_p * max(n, 1))(*[h.encode() for h in headers.values()])
        hdr_names = (ctypes.c_char_p * max(n, 1))(*[k.encode() for k in headers])
        rc = self.lib.nvrtcCreateProgram(
            ctypes.byref(prog), source.encode(), name.encode(), n, hdr_src, hdr_names
        )
        if rc != 0:
            return False, f"nvrtcCreateProgram: {self._err(rc)}", None, None
        try:
            opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
            rc = self.lib.nvrtcCompileProgram(prog, len(options), opts)
            log = self._get(prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog") or b""
            log = log.rstrip(b"\0").decode(errors="replace")
            if rc != 0:
                return False, f"{self._err(rc)}\n{log}", None, None
            ptx = self._get(prog, "nvrtcGetPTXSize", "nvrtcGetPTX")
            cubin = self._get(prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
            return True, log, ptx, cubin
        finally:
            self.lib.nvrtcDestroyProgram(ctypes.byref(prog))


@dataclass
class Result:
    file: str
    arch: str
    ok: bool
    log: str
    seconds: float
    entries: list[str] = field(default_factory=list)
    cubin_bytes: int = 0


_ENTRY_RE = re.compile(rb"^\s*\.(?:visible\s+)?\.entry\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", re.M)


def ptx_entries(ptx: bytes) -> list[str]:
    return [m.decode() for m in _ENTRY_RE.findall(ptx)]


def kernel_files() -> list[Path]:
    return sorted(KERNEL_DIR.glob("*.cu"))


def header_sources() -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(KERNEL_DIR.glob("*.cuh"))}


def read_manifest(path: Path = MANIFEST) -> list[str]:
    """Kernel names, one per line; '#' starts a comment; `{a,b}` expands (e.g. add_{f32,f64})."""
    names: list[str] = []
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        for tok in line.split():
            names.extend(_expand(tok))
    return names


def _expand(tok: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", tok)
    if not m:
        return [tok]
    out = []
    for alt in m.group(1).split(","):
        out.extend(_expand(tok[: m.start()] + alt + tok[m.end() :]))
    return out


class Checker:
    """Compiles files on demand and caches results (one compile per file and arch)."""

    def __init__(self, ptxas_verbose: bool = False):
        self.nvrtc = Nvrtc(find_nvrtc())
        self.include = find_cuda_include()
        self.headers = header_sources()
        self.ptxas_verbose = ptxas_verbose
        self._cache: dict[tuple[str, str], Result] = {}

    def options(self, arch: str) -> list[str]:
        opts = [f"-arch={arch}", f"-I{self.include}", *BASE_OPTIONS]
        if self.ptxas_verbose:
            opts.append("-Xptxas=-v")
        return opts

    def check(self, path: Path, arch: str) -> Result:
        key = (path.name, arch)
        if key in self._cache:
            return self._cache[key]
        src = path.read_text()
        t0 = time.perf_counter()
        # SASS: runs ptxas for the real target.
        ok, log, ptx, cubin = self.nvrtc.compile(src, path.name, self.options(arch), self.headers)
        if ok and cubin is None:
            ok, log = False, log + "\nnvrtcGetCUBIN returned nothing"
        entries: list[str] = []
        if ok:
            if ptx is None:
                # PTX is not kept for an sm_XX target: compile again for the virtual arch.
                virt = arch.replace("sm_", "compute_")
                ok, log2, ptx, _ = self.nvrtc.compile(
                    src, path.name, self.options(virt), self.headers
                )
                log = (log + "\n" + log2).strip()
            if ok and ptx is not None:
                entries = ptx_entries(ptx)
            elif ok:
                ok, log = False, log + "\nnvrtcGetPTX returned nothing"
        res = Result(
            path.name,
            arch,
            ok,
            log.strip(),
            time.perf_counter() - t0,
            entries,
            len(cubin) if cubin else 0,
        )
        self._cache[key] = res
        return res

    def precompile(self, files: list[Path], arches: list[str], jobs: int | None = None) -> None:
        """Compile every (file, arch) not cached yet, in parallel threads (ctypes releases the
        GIL during nvrtcCompileProgram, and NVRTC compiles separate programs concurrently)."""
        todo = [(f, a) for a in arches for f in files if (f.name, a) not in self._cache]
        if not todo:
            return
        jobs = jobs or min(len(todo), os.cpu_count() or 1)
        if jobs <= 1:
            for f, a in todo:
                self.check(f, a)
            return
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(lambda fa: self.check(*fa), todo))

    def defined(self, arch: str) -> list[str]:
        """Every kernel name defined by cuda_kernels/*.cu for `arch`."""
        return [e for f in kernel_files() for e in self.check(f, arch).entries]

    def missing_from_manifest(self, arch: str, manifest: list[str] | None = None) -> list[str]:
        manifest = read_manifest() if manifest is None else manifest
        have = set(self.defined(arch))
        return [n for n in manifest if n not in have]

    def unlisted(self, arch: str) -> list[str]:
        """Kernels defined but not named in the manifest (dead code, or a manifest to update)."""
        listed = set(read_manifest())
        return [e for e in self.defined(arch) if e not in listed]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", action="append", help="sm_XX (repeatable; default sm_80, sm_90)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print NVRTC logs of OK files")
    ap.add_argument("--ptxas-verbose", action="store_true", help="pass -Xptxas=-v")
    ap.add_argument("-j", "--jobs", type=int, help="parallel compiles (default: CPU count)")
    ap.add_argument("files", nargs="*", type=Path)
    args = ap.parse_args(argv)
    arches = args.arch or list(DEFAULT_ARCHES)
    try:
        checker = Checker(ptxas_verbose=args.ptxas_verbose)
    except NvrtcNotFound as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    major, minor = checker.nvrtc.version()
    print(f"NVRTC {major}.{minor} ({checker.nvrtc.path}); headers {checker.include}")
    files = [f.resolve() for f in args.files] or kernel_files()
    t0 = time.perf_counter()
    checker.precompile(files, arches, args.jobs)
    print(f"compiled {len(files)} files x {len(arches)} arches in {time.perf_counter() - t0:.1f}s")
    failed = 0
    for arch in arches:
        total = 0.0
        for f in files:
            r = checker.check(f, arch)
            total += r.seconds
            status = "OK  " if r.ok else "FAIL"
            print(
                f"{status} {arch} {r.file:28s} {len(r.entries):5d} kernels "
                f"{r.cubin_bytes / 1024:8.0f} KiB cubin {r.seconds:6.2f}s"
            )
            if not r.ok:
                failed += 1
            if r.log and (not r.ok or args.verbose):
                print("    " + r.log.replace("\n", "\n    "))
        print(f"     {arch} sum of compile times {total:.2f}s")
        if not args.files:
            missing = checker.missing_from_manifest(arch)
            n = len(read_manifest())
            if missing:
                failed += 1
                print(f"FAIL {arch} manifest: {len(missing)} of {n} kernels missing:")
                for name in missing:
                    print(f"    {name}")
            else:
                print(f"OK   {arch} manifest: all {n} kernels present")
            extra = checker.unlisted(arch)
            if extra:
                print(f"note {arch}: {len(extra)} kernels not in manifest.txt: {' '.join(extra)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
