# AuthGate: two commands on a fresh Debian 12 machine with Swift installed.
#   make run    install what is missing, build, start the gateway on config/authgate.yaml
#   make test   install what is missing, start a throwaway Redis, run every test, the linter
#               and each fuzz target for FUZZ_SECONDS
#   make fuzz   build and run every fuzz target for FUZZ_SECONDS (scripts/fuzz.sh)
SWIFT ?= swift
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CONFIG ?= config/authgate.yaml
APT_PACKAGES := libhiredis-dev libjemalloc-dev redis-server redis-sentinel pkg-config python3 python3-venv python3-yaml nginx-light chromium-headless-shell
# Seconds each fuzz target runs in `make test` and `make fuzz` (the long run: FUZZ_RUNS=1000000).
FUZZ_SECONDS ?= 30
# Flags of the release binary: the Swift runtime linked in (--static-swift-stdlib), so the binary
# needs no Swift toolchain where it runs, and calls into the runtime (reference counting, tasks)
# are direct, its thread-locals without __tls_get_addr: 5-10% less CPU per answer on the lighter
# rows (docs/performance-history.md). The benchmarks build with the same flags (scripts/lib.sh
# release_build; deploy/check.py keeps the two the same).
RELEASE_FLAGS ?= --static-swift-stdlib

.PHONY: deps build release run test test-e2e lint fuzz check-config deploy-check bench-redis clean

deps:
	@scripts/install-deps.sh $(APT_PACKAGES)

build: deps
	$(SWIFT) build -j $(JOBS)

release: deps
	$(SWIFT) build -c release --product authgate $(RELEASE_FLAGS) -j $(JOBS)

run: build
	.build/debug/authgate serve --config $(CONFIG)

check-config: build
	.build/debug/authgate check-config --config $(CONFIG)

# The linter, the build (no compiler warning in Sources/ or Tests/: scripts/build-tests.sh), Swift tests, the
# deploy and OpenAPI checks, then the end-to-end suite (the official
# Python client against a running gateway) and schemathesis against a live gateway, beside one
# throwaway redis-server; then every fuzz target for FUZZ_SECONDS.
test: deps
	scripts/lint.sh
	SWIFT=$(SWIFT) scripts/build-tests.sh -j $(JOBS)
	python3 deploy/check.py
	scripts/check-openapi.sh
	scripts/with-redis.sh sh -c '$(SWIFT) test --skip-build && Tests/EndToEnd/run.sh && scripts/schemathesis.sh'
	scripts/fuzz.sh $(FUZZ_SECONDS)

lint:
	scripts/lint.sh

fuzz: deps
	scripts/fuzz.sh $(FUZZ_SECONDS)

test-e2e: deps
	$(SWIFT) build -j $(JOBS)
	scripts/with-redis.sh Tests/EndToEnd/run.sh

# What can be checked here of deploy/: YAML parses, manifests carry probes and limits, the
# Dockerfile builds with `make release`, the systemd unit is hardened.
deploy-check: build
	python3 deploy/check.py

bench-redis: deps
	bench/redis/run.sh

clean:
	rm -rf .build
