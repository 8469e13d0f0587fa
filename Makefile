# The two set-up commands of the README:
#   make train   installs missing Debian packages, builds, and trains the Fashion-MNIST MLP
#                (MODEL=cnn EPOCHS=3 for the CNN)
#   make test    the same set-up, then the whole test suite (ctest)
# Other targets: build, asan (the sanitizer build of the tests), bench, clean.

BUILD ?= build
ASAN_BUILD ?= build-asan
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

# Debian packages the build and the tests need (checked one by one; only missing ones install).
DEB_PACKAGES = cmake make gcc pkg-config libblis-openmp-dev libcmocka-dev libcjson-dev libyaml-dev zlib1g-dev dataset-fashion-mnist

.PHONY: all deps configure build train test asan bench clean

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

MODEL ?= mlp
EPOCHS ?= 5
SEED ?= 1

train: build
	OMP_NUM_THREADS=$(JOBS) ./$(BUILD)/examples/fashion_mnist --model $(MODEL) --epochs $(EPOCHS) --seed $(SEED)

test: build
	cd $(BUILD) && OMP_NUM_THREADS=2 ctest --output-on-failure -j $(JOBS)

# AddressSanitizer + UndefinedBehaviorSanitizer build of the library and its tests (the
# install/export checks and the bench smoke run only in the normal build: ASan adds symbols
# and wants its runtime first in consumers).
asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTFL_SANITIZE=ON -DTFL_CUDA=OFF $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && OMP_NUM_THREADS=2 ASAN_OPTIONS=detect_leaks=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(JOBS) -LE "bench|install"

# Benchmarks side by side with PyTorch (pip install torch first).
bench: build
	bash tests/bench/run_side_by_side.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
