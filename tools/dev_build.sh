#!/usr/bin/env bash
# Fast edit-compile-test loop without maturin: build the extension (debug unless
# PROFILE=release) and drop it into python/ferrotorch/ so `PYTHONPATH=python pytest` sees it.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-debug}
flag=""; [ "$profile" = release ] && flag="--release"
cargo build $flag --features python,pyo3/extension-module --lib
cp "target/$profile/libferrotorch.so" python/ferrotorch/_C.abi3.so
