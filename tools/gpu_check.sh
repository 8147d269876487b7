#!/usr/bin/env bash
# On a lent GPU machine (the `device` tool's `run`, which has PyTorch but no Rust): install the
# ferrotorch wheel carried in .wheel/, report where the CUDA libraries are, run the GPU test
# suite and the GPU benchmarks against PyTorch. Logs go to $OUT (or /tmp/gpu_out).
#   bash tools/gpu_check.sh [all | comma-separated steps: tests,bench,torch] [extra pytest args...]
# FT_TREE_PYTHON=1 runs the working tree's Python package with the wheel's extension.
set -u
what=${1:-all}
shift || true
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
py=python3

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
$py -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .wheel/ferrotorch-*.whl || exit 1
export PYTHONPATH=/tmp/site
if [ "${FT_TREE_PYTHON:-0}" = 1 ]; then
    # Python changes made since the wheel was built: the wheel's extension under the
    # working tree's package.
    cp /tmp/site/ferrotorch/_C.abi3.so python/ferrotorch/ && export PYTHONPATH=$PWD/python
fi

# cudarc (built for CUDA 12.9 names) looks for libnvrtc.so / libnvrtc.so.12 and the like; a
# CUDA 13 machine only has libnvrtc.so.13 unless the toolkit's unversioned links are on the
# loader path. Put unversioned links to the newest copies found in a folder of our own.
links=/tmp/culinks
mkdir -p $links
for lib in nvrtc nvrtc-builtins cublas cublasLt; do
    if ! ldconfig -p | grep -q "lib$lib.so "; then
        f=$(ls -1 /usr/local/cuda/lib64/lib$lib.so.* /usr/local/cuda/targets/x86_64-linux/lib/lib$lib.so.* \
            2>/dev/null | sort -V | tail -1)
        [ -n "$f" ] && ln -sf "$f" $links/lib$lib.so && echo "linked lib$lib.so -> $f"
    fi
done
export LD_LIBRARY_PATH=$links:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export FERROTORCH_KERNEL_CACHE=/tmp/ft_kernels

$py - <<'PY'
import ferrotorch as ft
print("ferrotorch cuda available:", ft.cuda.is_available(), ft._C._cuda_unavailable_reason())
if ft.cuda.is_available():
    print(ft.cuda.get_device_name(), ft.cuda.get_device_capability())
    x = ft.arange(6.0, device="cuda").reshape(2, 3)
    print("smoke:", (x * 2 + 1).sum(1).cpu().tolist(), (x @ x.t()).cpu().tolist())
PY

has() { [[ ",$what," == *",$1,"* ]] || [ "$what" = all ]; }
if has tests; then
    $py -m pytest -m cuda tests/python/ -q -rfEs -p no:cacheprovider "$@" 2>&1 | tee "$OUT/cuda_tests.log"
fi
if has bench; then
    $py benches/cuda_compare.py 2>&1 | tee "$OUT/cuda_bench.log"
fi
if has torch; then
    # The tests that compare with PyTorch (skipped where it is not installed; it is there).
    files=$(grep -l 'importorskip("torch")' tests/python/test_*.py)
    $py -m pytest $files -q -rfE -p no:cacheprovider 2>&1 | tee "$OUT/torch_tests.log" | tail -40
fi
