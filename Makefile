# AuthGate: two commands on a fresh Debian 12 machine with Swift installed.
#   make run    install what is missing, build, start the gateway on config/authgate.yaml
#   make test   install what is missing, start a throwaway Redis, run every test
SWIFT ?= swift
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CONFIG ?= config/authgate.yaml
APT_PACKAGES := libhiredis-dev redis-server pkg-config

.PHONY: deps build release run test check-config bench-redis format clean

deps:
	@scripts/install-deps.sh $(APT_PACKAGES)

build: deps
	$(SWIFT) build -j $(JOBS)

release: deps
	$(SWIFT) build -c release -j $(JOBS)

run: build
	.build/debug/authgate serve --config $(CONFIG)

check-config: build
	.build/debug/authgate check-config --config $(CONFIG)

test: deps
	$(SWIFT) build --build-tests -j $(JOBS)
	scripts/with-redis.sh $(SWIFT) test --skip-build

bench-redis: deps
	bench/redis/run.sh

clean:
	rm -rf .build
