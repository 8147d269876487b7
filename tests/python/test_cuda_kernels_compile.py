"""Every cuda_kernels/*.cu compiles with NVRTC for sm_80 and sm_90, and defines the manifest.

No GPU is needed: NVRTC comes from the PyPI wheels nvidia-cuda-nvrtc-cu12 /
nvidia-cuda-runtime-cu12 (12.9.*); the tests skip, saying so, when they are not installed.
Each (file, arch) is compiled once per session (in parallel threads) and the result cached.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "check_cuda_kernels", ROOT / "tools" / "check_cuda_kernels.py"
)
ck = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = ck  # dataclasses look their module up there
_spec.loader.exec_module(ck)

FILES = ck.kernel_files()
ARCHES = list(ck.DEFAULT_ARCHES)


@pytest.fixture(scope="session")
def checker():
    try:
        c = ck.Checker()
    except ck.NvrtcNotFound as e:
        pytest.skip(f"NVRTC not installed: {e}")
    c.precompile(FILES, ARCHES)
    return c


def test_kernel_files_exist():
    assert {f.name for f in FILES} >= {
        "elementwise_unary.cu",
        "elementwise_binary.cu",
        "cast.cu",
        "fill_copy.cu",
        "reduce.cu",
        "index.cu",
        "random.cu",
        "nn.cu",
        "optim.cu",
    }


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_compiles(checker, path, arch):
    r = checker.check(path, arch)
    assert r.ok, f"{path.name} failed for {arch}:\n{r.log}"
    assert r.cubin_bytes > 0
    assert r.entries, f"{path.name} defines no kernels"
    assert all(not e.startswith("_Z") for e in r.entries), 'kernels must be extern "C"'


@pytest.mark.parametrize("arch", ARCHES)
def test_manifest_kernels_present(checker, arch):
    missing = checker.missing_from_manifest(arch)
    assert not missing, f"{len(missing)} manifest kernels missing for {arch}: {missing[:20]}"


def test_kernel_names_unique_across_files(checker):
    seen = {}
    for f in FILES:
        for e in checker.check(f, ARCHES[0]).entries:
            assert e not in seen, f"{e} defined in both {seen[e]} and {f.name}"
            seen[e] = f.name


def test_manifest_expansion():
    assert ck._expand("add_{f32,f64}{,_contig}") == [
        "add_f32",
        "add_f32_contig",
        "add_f64",
        "add_f64_contig",
    ]


def test_every_kernel_listed_in_manifest(checker):
    extra = checker.unlisted(ARCHES[0])
    assert not extra, f"kernels defined but not in cuda_kernels/manifest.txt: {extra[:20]}"
