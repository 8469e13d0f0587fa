# The two set-up commands of the README:
#   make train   installs missing Debian packages, builds, and trains the Fashion-MNIST MLP
#                through the tapeflow program (CONFIG=configs/fashion_mnist_cnn.yaml for the CNN)
#   make test    the same set-up, then the whole test suite (ctest); TFL_TEST_FAKE_GPU=1
#                runs it with a fake GPU:0 in every context
# Other targets: build, asan (the sanitizer build of the tests), fuzz (short libFuzzer runs of
# the data loaders and the checkpoint reader: tests/fuzz/README.md), bench, clean.

BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_HARNESSES = idx csv text config safetensors events
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

# Debian packages the build and the tests need (checked one by one; only missing ones install).
# clang, libclang-rt-14-dev (libFuzzer and the sanitizer runtimes of clang 14) and libomp-dev
# (clang's OpenMP) are for the fuzz harnesses; librsvg2-bin (rsvg-convert) renders the plot test's SVG
# to PNG; fortunes is the text corpus (/usr/share/games/fortunes) of the text dataset tests.
DEB_PACKAGES = cmake make gcc pkg-config libblis-openmp-dev libcmocka-dev libcjson-dev libyaml-dev zlib1g-dev dataset-fashion-mnist fortunes librsvg2-bin clang libclang-rt-14-dev libomp-dev libopenmpi-dev openmpi-bin

.PHONY: all deps configure build train test asan fuzz bench clean

all: build

deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing missing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO=sudo; \
	  else echo "error: need root (or sudo) to install:$$missing" >&2; exit 1; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing; \
	fi

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The run config `make train` trains (CONFIG=configs/fashion_mnist_cnn.yaml for the CNN,
# configs/xor.yaml for a one-second run); SET="training.epochs=3 ..." adds --set overrides.
CONFIG ?= configs/fashion_mnist_mlp.yaml
SET ?=

# Builds the library and the program alone (no tests, benchmarks or other examples: `make
# test` and `make build` build those).
train: configure
	cmake --build $(BUILD) -j $(JOBS) --target tapeflow_cli
	OMP_NUM_THREADS=$(JOBS) ./$(BUILD)/examples/tapeflow train $(CONFIG) $(foreach s,$(SET),--set $(s))

# TFL_TEST_FAKE_GPU=1: every context of every test has a GPU:0 (a backend module of host
# memory, tests/common/fake_gpu_module.c, loaded through TFL_GPU_MODULE), as on a GPU machine.
TFL_TEST_FAKE_GPU ?= 0
FAKE_GPU_ENV = $(if $(filter 1,$(TFL_TEST_FAKE_GPU)),TFL_GPU_MODULE=$(abspath $(BUILD))/tests/libtfl_fake_gpu.so,)

test: build
	cd $(BUILD) && $(FAKE_GPU_ENV) OMP_NUM_THREADS=2 ctest --output-on-failure -j $(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer build of the library and its tests (the
# install/export checks and the bench smoke run only in the normal build: ASan adds symbols
# and wants its runtime first in consumers).
asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTFL_SANITIZE=ON -DTFL_CUDA=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && OMP_NUM_THREADS=2 ASAN_OPTIONS=detect_leaks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS) -LE "bench|install"

# libFuzzer harnesses of the IDX and CSV loaders, the YAML config loader and the checkpoint
# reader (clang; library built with ASan + UBSan), each run for FUZZ_SECONDS over the
# committed seed corpus (and tests/fuzz/<h>.dict where there is one). New inputs go to a
# temporary corpus (the committed one is only read); a crash fails the target and its input
# is kept in $(FUZZ_BUILD)/crashes/.
fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DTFL_FUZZ=ON -DTFL_CUDA=OFF -DBUILD_TESTING=OFF -DTFL_BUILD_EXAMPLES=OFF -DTFL_BUILD_BENCH=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(addprefix fuzz_,$(FUZZ_HARNESSES))
	@mkdir -p $(FUZZ_BUILD)/crashes; \
	for h in $(FUZZ_HARNESSES); do \
	  work=$$(mktemp -d) || exit 1; \
	  echo "fuzz_$$h: $(FUZZ_SECONDS) s over tests/fuzz/corpus/$$h"; \
	  if ! $(FUZZ_BUILD)/tests/fuzz/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	      -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crashes/$$h- \
	      $$(test -f tests/fuzz/$$h.dict && echo -dict=tests/fuzz/$$h.dict) \
	      $$work tests/fuzz/corpus/$$h > $(FUZZ_BUILD)/fuzz_$$h.log 2>&1; then \
	    tail -n 60 $(FUZZ_BUILD)/fuzz_$$h.log; rm -rf $$work; \
	    echo "error: fuzz_$$h failed (log: $(FUZZ_BUILD)/fuzz_$$h.log, input: $(FUZZ_BUILD)/crashes/)" >&2; \
	    exit 1; \
	  fi; \
	  grep -E "DONE |^Done|number_of_executed_units" $(FUZZ_BUILD)/fuzz_$$h.log; \
	  rm -rf $$work; \
	done

# Benchmarks side by side with PyTorch (pip install torch first).
bench: build
	bash tests/bench/run_side_by_side.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
