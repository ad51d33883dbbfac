#!/usr/bin/env bash
# swift format lint --strict with the committed .swift-format over every Swift file we write:
# the gateway, its tests, the fuzz targets and the benchmarks. Fails on any finding; fix layout
# with `swift format format -i -r <paths>` and the rest by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Package.swift Sources Tests Fuzz/Package.swift Fuzz/Sources bench/redis/Sources bench/exchange/Sources)
swift format lint --strict --parallel -r "${paths[@]}"
echo "swift format lint: clean ($(find "${paths[@]}" -name '*.swift' | wc -l) files)"
