# rof - top-level build.  The README's two commands:
#   make demo    boot the test VM and show the kvstore under load across restarts
#   make check   every test: lint, unit tests, fuzz smoke, VM end-to-end tests
# Both install missing Debian packages first (as root), then build.
#
# Other targets: build (default), deps, kmod, userspace (userspace-core and
# unit-tests), progs, unit, vmtest, lint, fuzz, bench (rof-bench's cases
# B0-B8 and B10 in the VM: bench/run; then B9), bench-host (B9 alone: the executor
# on this host, no VM), clean.
# BUILD=dir picks the out-of-tree build directory; KVER=version the kernel
# (default: packaging/kver).

BUILD ?= $(CURDIR)/build
FUZZ_BUILD ?= $(CURDIR)/build-fuzz
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 300
export ROF_SRC := $(CURDIR)
export ROF_BUILD := $(BUILD)

.PHONY: all build deps kmod userspace userspace-core unit-tests progs check demo unit vmtest lint fuzz fuzz-build bench bench-host deb \
	check-install clean

all: build

deps:
	@packaging/install-deps

build: kmod userspace progs

# Kbuild writes its objects beside the sources, so build a copy in $(BUILD)
# and keep the source tree clean.  A file is copied when its content
# differs, and the copy is dated now: a source's own time could be older
# than an object built from the copy before an edit made during that build.
kmod: deps
	@mkdir -p $(BUILD)/kmod
	@cd kmod && find . -name '*.[ch]' -o -name Kbuild -o -name Makefile | \
		while read -r f; do \
			mkdir -p "$(BUILD)/kmod/$${f%/*}"; \
			cmp -s "$$f" "$(BUILD)/kmod/$$f" || cp "$$f" "$(BUILD)/kmod/$$f"; \
		done
	@cmp -s VERSION $(BUILD)/kmod/VERSION || cp VERSION $(BUILD)/kmod/VERSION
	$(MAKE) -C /usr/src/linux-headers-$$(packaging/kver) M=$(BUILD)/kmod ROF_WERROR=1 modules

# The tests' build is the packages' build: configured as debian/rules
# (dh_auto_configure) configures it, with Debian's hardening flags
# (dpkg-buildflags) and install layout, so that make check packages the
# very binaries it tested (selftests/check: packaging/deb with
# ROF_PREBUILT) instead of compiling everything twice.  Without debug info
# (it slows every compile, and nothing here reads it); DEBUG=1 keeps -g
# for a debugger; nor the reproducible-build path maps (a checkout path
# may hold a space, which no flag can carry).  The flags are given on the
# command line, not taken from the environment, so that they apply to a
# build directory configured before too.
ifneq ($(DEBUG),1)
DEB_FLAGS_ENV = DEB_CFLAGS_STRIP=-g DEB_CXXFLAGS_STRIP=-g
endif
deb_flag = $(shell DEB_BUILD_MAINT_OPTIONS="hardening=+all reproducible=-fixfilepath,-fixdebugpath" \
	$(DEB_FLAGS_ENV) dpkg-buildflags --get $(1))
CMAKE_CONFIG = -DCMAKE_BUILD_TYPE=None \
	-DCMAKE_C_FLAGS="$(call deb_flag,CFLAGS) $(call deb_flag,CPPFLAGS)" \
	-DCMAKE_CXX_FLAGS="$(call deb_flag,CXXFLAGS) $(call deb_flag,CPPFLAGS)" \
	-DCMAKE_EXE_LINKER_FLAGS="$(call deb_flag,LDFLAGS)" \
	-DCMAKE_SHARED_LINKER_FLAGS="$(call deb_flag,LDFLAGS)" \
	-DCMAKE_MODULE_LINKER_FLAGS="$(call deb_flag,LDFLAGS)" \
	-DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc \
	-DCMAKE_INSTALL_LOCALSTATEDIR=/var -DCMAKE_INSTALL_RUNSTATEDIR=/run \
	-DCMAKE_INSTALL_LIBDIR=lib/$(shell dpkg-architecture -qDEB_HOST_MULTIARCH) \
	-DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON -DCMAKE_UNITY_BUILD=$(UNITY)

# A unity build (CMake's UNITY_BUILD): a target's files are compiled eight
# at a time as one translation unit, so the gRPC, protobuf and GoogleTest
# code they share is instantiated and compiled once per batch, not once per
# file: rofd, rofctl and their unit tests took 473 CPU-s instead of 1021.
# UNITY=OFF compiles file by file, for editing one file of a large target.
UNITY ?= ON

# userspace: userspace-core, what ships and what the VM tests run (rofd,
# rofctl, librof, the examples, rof-bench), then unit-tests, the unit tests.
userspace: unit-tests

userspace-core: deps
	cmake -S . -B $(BUILD) -G Ninja $(CMAKE_CONFIG) -DROF_WERROR=ON
	cmake --build $(BUILD) -j $(JOBS)

unit-tests: userspace-core
	cmake --build $(BUILD) -j $(JOBS) --target unit-tests

progs: deps
	$(MAKE) -C selftests/progs O=$(BUILD)/selftests

unit: userspace
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

vmtest: build
	selftests/vm/run

demo: build
	selftests/vm/run --mode demo --timeout 300

# The whole benchmark, one VM boot; BENCH_ARGS passes rof-bench options.
# Then B9, which runs on this host (bench-host; BENCH_HOST_ARGS passes
# rof-bench-exec options).
bench: build
	bench/run $(BENCH_ARGS)
	$(MAKE) --no-print-directory bench-host

bench-host:
	cmake --build $(BUILD) -j $(JOBS) --target rof-bench-exec
	@mkdir -p $(BUILD)/bench/results
	$(BUILD)/bench/rof-bench-exec --json $(BUILD)/bench/results/b9.json $(BENCH_HOST_ARGS)

# The Debian packages (packaging/deb: dpkg-buildpackage, then lintian), in
# $(BUILD)/deb; check-install installs them in a VM booting systemd.
deb: deps
	packaging/deb

check-install: build deb
	selftests/install/run

lint: deps
	selftests/lint

fuzz-build: deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DROF_FUZZ=ON -DROF_WERROR=ON \
		-DCMAKE_UNITY_BUILD=$(UNITY)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target rof_fuzz rof_prog_test

fuzz: fuzz-build
	libclient/prog/fuzz/run-fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BUILD)

# selftests/check runs deps and the build itself, to time them.
check:
	@selftests/check

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD)
