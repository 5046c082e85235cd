# deepum: the two commands of the README, and a few helpers.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# The interpreter with Debian's python3-torch (a python3 earlier on PATH may lack it).
PYTHON ?= /usr/bin/python3

# make fuzz: Clang + libFuzzer + ASan + UBSan in $(FUZZ_BUILD), each target for
# FUZZ_SECONDS (docs/fuzzing.md). FUZZ_CMAKE_FLAGS go to its cmake (e.g. a compiler launcher).
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_CMAKE_FLAGS ?=

.PHONY: all setup configure build test demo profiles format tidy clean fuzz fuzz-build

all: build

setup:
	@bash tools/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

demo: build
	@bash bench/demo.sh $(BUILD)

# Regenerates the shipped real-model profiles in tests/data (slow: real compute on the CPU).
profiles: setup
	@cd python && $(PYTHON) -m deepum_trace.ship --out ../tests/data

fuzz-build: setup
	@bash fuzz/build.sh $(FUZZ_BUILD) $(FUZZ_CMAKE_FLAGS)

fuzz: fuzz-build
	@bash fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

format:
	@git ls-files '*.cpp' '*.h' | xargs clang-format -i

tidy: build
	@git ls-files '*.cpp' | grep -v '^tests/' | xargs clang-tidy -p $(BUILD) --quiet

clean:
	@rm -rf $(BUILD)
