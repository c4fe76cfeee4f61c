# The two commands of the README. Each sets up what it needs on a fresh Debian 12 machine.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all deps test-deps build demo test bench clean

all: build

deps:
	@tools/deps.sh build

test-deps:
	@tools/deps.sh test

$(BUILD)/build.ninja $(BUILD)/Makefile:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/Makefile
	cmake --build $(BUILD) -j $(JOBS)

demo: deps build
	@tools/demo.sh $(BUILD)

test: test-deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900

bench: test-deps build
	tests/bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
