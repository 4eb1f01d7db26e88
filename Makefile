# cmsc — entry points. `make demo` is the main job; `make test` runs every test tier.
# Both install what they need (Rust components) on a fresh machine with a Rust toolchain.

CARGO ?= cargo
OUT   ?= out

.PHONY: all demo test lint doc unit bench toolchain clean

all: demo

## toolchain: the rustup components the checks need (a no-op when present)
toolchain:
	@command -v rustup >/dev/null && rustup component add rustfmt clippy >/dev/null 2>&1 || true

## demo: build everything and simulate the paper's charged torus into $(OUT)/ (PC2 cache,
## OBJ mesh, energy log). The Blender add-on issue turns this into a baked Blender scene.
demo: toolchain
	$(CARGO) build --release --workspace
	$(CARGO) run --release -p cmsc-core --example torus -- $(OUT)

## test: formatting, lints, docs, then every test tier
test: lint doc unit

lint: toolchain
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps

unit:
	$(CARGO) test --workspace

## bench: criterion benchmarks (see cmsc-core/benches/); CMSC_BENCH_LARGE=1 adds n = 100K steps
bench:
	$(CARGO) bench -p cmsc-core

clean:
	$(CARGO) clean
	rm -rf $(OUT)
