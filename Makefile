# Two entry points for a new user: `make demo` and `make test`. Both set everything up.
VENV    ?= .venv
PY      := $(VENV)/bin/python
PIP     := $(VENV)/bin/pip
STAMP   := $(VENV)/.deps-installed

.PHONY: demo test build rust-test py-test cuda-emu-test lint bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q "maturin>=1.5,<2" "numpy>=1.24" "pytest>=7" "hypothesis>=6" graphviz safetensors ruff
	touch $(STAMP)

# Test-only extras: NVIDIA's NVRTC and CUDA headers (pip wheels, no GPU needed) so the tests
# can check that every cuda_kernels/*.cu file compiles. Pinned: newer NVRTC emits PTX that
# the GPU machines' CUDA 13.0 driver rejects.
TEST_STAMP := $(VENV)/.test-deps-installed
$(TEST_STAMP): $(STAMP)
	$(PIP) install -q "nvidia-cuda-nvrtc-cu12==12.9.*" "nvidia-cuda-runtime-cu12==12.9.*"
	touch $(TEST_STAMP)

# Build the native module (release, thin LTO) into the venv.
build: $(STAMP)
	VIRTUAL_ENV=$(abspath $(VENV)) $(VENV)/bin/maturin develop --release -q

demo: build
	$(PIP) install -q tqdm matplotlib
	$(PY) examples/demo.py

rust-test:
	cargo test -q

py-test: build $(TEST_STAMP)
	$(PY) -m pytest tests/python -q

# The GPU test suite again, on the CPU CUDA emulator (tools/cuda_emu): every kernel launch,
# argument layout and kernel body runs without a GPU. Needs g++.
cuda-emu-test: build $(TEST_STAMP)
	$(PY) -m pytest tools/cuda_emu/test_fake_linalg.py -q -p no:cacheprovider
	tools/cuda_emu/run $(PY) -m pytest -m cuda tests/python -q -p no:cacheprovider

test: rust-test py-test cuda-emu-test

lint: $(STAMP)
	cargo fmt --all -- --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --features python -- -D warnings
	cargo clippy --features python,cuda -- -D warnings
	$(VENV)/bin/ruff check python tests benches examples tools

bench: build
	$(PY) benches/compare.py

clean:
	rm -rf $(VENV) target
