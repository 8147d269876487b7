#!/usr/bin/env bash
# Fast edit-compile-test loop without maturin: build the extension (debug unless PROFILE is
# `release` or `fastrel`) and drop it into python/ferrotorch/ so `PYTHONPATH=python pytest` sees it.
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-debug}
case "$profile" in
  debug | dev) profile=debug; flag="" ;;
  *) flag="--profile $profile" ;;
esac
# shellcheck disable=SC2086
cargo build $flag --features python,cuda,pyo3/extension-module --lib
# Copy then rename: a Python process that has the old library loaded keeps it (overwriting it
# in place would crash that process).
cp "${CARGO_TARGET_DIR:-target}/$profile/libferrotorch.so" python/ferrotorch/_C.abi3.so.tmp
mv python/ferrotorch/_C.abi3.so.tmp python/ferrotorch/_C.abi3.so
