# The commands of the README. Each sets up what it needs on a fresh Debian 12 machine, in any
# order: the build is configured once here, and CMake re-configures by itself whenever the set of
# installed Debian packages changes (CMakeLists.txt, "Reconfigure when packages change"), so a
# build configured by `make demo` picks up the MPI compilers `make test` installs later.
BUILD ?= build
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
# Extra arguments for ctest, e.g. make test CTEST_ARGS='-R integ_test_ranks'
CTEST_ARGS ?=
CMAKE = cmake
CONFIGURE = $(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps test-deps package-deps configure build demo test sanitize sanitize-run bench install deb dist wheel clean \
  format format-fix lint

all: build

deps:
	@tools/deps.sh build

test-deps:
	@tools/deps.sh test

package-deps:
	@tools/deps.sh package

# Only a build directory that was never configured is configured here; afterwards every
# `cmake --build` re-runs the configure step itself when CMakeLists.txt or the packages change.
configure:
	@[ -f $(BUILD)/CMakeCache.txt ] || $(CONFIGURE)

build: deps
	@$(MAKE) --no-print-directory configure
	$(CMAKE) --build $(BUILD) -j $(JOBS)

# The demo needs the hangscan binary only: not the tests, their programs or their packages.
demo: deps
	@$(MAKE) --no-print-directory configure
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target hangscan
	@tools/demo.sh $(BUILD)

# The unit tests and fuzz corpora under ASan+UBSan first (`make sanitize`), then the whole suite
# against the real binary; both always run, and either failing fails `make test`. SANITIZE=0
# leaves the sanitizer stage out (it costs a second build; see docs/design.md for its time).
SANITIZE ?= 1
test: test-deps
	@$(MAKE) --no-print-directory configure
	$(CMAKE) --build $(BUILD) -j $(JOBS)
	@san=0; if [ "$(SANITIZE)" = 1 ]; then $(MAKE) --no-print-directory sanitize-run || san=$$?; fi; \
	  rc=0; cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 900 $(CTEST_ARGS) || rc=$$?; \
	  if [ $$san -ne 0 ]; then echo "make test: the ASan+UBSan unit tests failed (above)"; fi; \
	  [ $$san -eq 0 ] && [ $$rc -eq 0 ]

# The unit tests and the fuzz corpora (tests/fuzz: the JSON reader, the core reader and the whole
# capture of a core under hostile input) built with ASan and UBSan, in their own build directory.
# Part of `make test` (above).
SANITIZE_BUILD ?= build-sanitize
sanitize: test-deps
	@$(MAKE) --no-print-directory sanitize-run

sanitize-run:
	@[ -f $(SANITIZE_BUILD)/CMakeCache.txt ] || $(CMAKE) -S . -B $(SANITIZE_BUILD) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHANGSCAN_SANITIZE=ON
	$(CMAKE) --build $(SANITIZE_BUILD) -j $(JOBS) --target unit_tests
	cd $(SANITIZE_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) --timeout 900 -L unit $(CTEST_ARGS)

bench: test-deps
	@$(MAKE) --no-print-directory configure
	$(CMAKE) --build $(BUILD) -j $(JOBS)
	tests/bench/run.sh $(BUILD)

# The binary, hangscan(1) and the bash completion under PREFIX (DESTDIR is honoured).
install: deps
	@$(MAKE) --no-print-directory configure
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target hangscan
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

# A Debian package (CPack) with the runtime dependencies dpkg-shlibdeps finds: $(BUILD)/hangscan_*.deb
deb: package-deps
	@$(MAKE) --no-print-directory configure
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target hangscan
	cd $(BUILD) && cpack -G DEB

# One self-contained tarball for nodes that have none of hangscan's libraries (tools/dist.sh):
# $(DIST_DIR)/hangscan-VERSION-x86_64-linux.tar.gz, needing only a Linux kernel (3.2+).
DIST_DIR ?= $(BUILD)/dist
dist: deps
	@$(MAKE) --no-print-directory configure
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target hangscan
	@tools/dist.sh $(BUILD) $(DIST_DIR)

# The same tree as a Python wheel (tools/wheel.py): pip install $(DIST_DIR)/hangscan-*.whl
wheel: dist
	@tools/wheel.py $(DIST_DIR)/hangscan-$$($(BUILD)/hangscan --version | awk '{print $$2}')-x86_64-linux.tar.gz $(DIST_DIR)

clean:
	rm -rf $(BUILD)

# The layout (.clang-format): `make format` checks the tree (tests/programs and the generated
# bpf/vmlinux.h left out), `make format-fix` applies it. Seconds; not part of `make test`.
format:
	@tools/lint.sh format

format-fix:
	@tools/lint.sh format-fix

# The lint set (.clang-tidy) over src/ and tools/, from the build's compile database (the build
# makes the generated headers the sources include). Minutes of CPU: not part of `make test`.
lint: deps
	@$(MAKE) --no-print-directory configure
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target hangscan
	@JOBS=$(JOBS) tools/lint.sh lint $(BUILD)
