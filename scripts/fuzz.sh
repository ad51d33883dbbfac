#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ (address sanitizer, coverage for libFuzzer) and runs each.
#
#   scripts/fuzz.sh [SECONDS-PER-TARGET] [TARGET ...]   run each target for a time (default 30 s)
#   FUZZ_RUNS=1000000 scripts/fuzz.sh 0 [TARGET ...]    run each target for a number of inputs
#   FUZZ_CONFIGURATION=debug scripts/fuzz.sh ...         a debug build (faster to build, slower to run)
#
# Each target starts from its committed seeds (Fuzz/Corpus/<Target>), the inputs that once broke
# it (Fuzz/Regressions/<Target>, each with a unit test too) and what earlier runs on this machine
# found (Fuzz/.build/corpus/<Target>, not committed), with its dictionary. A crash
# or a failed property stops the run: the input is kept under Fuzz/.build/artifacts/<Target>/,
# printed in base64, and the script exits 1. Otherwise it prints a table: executions, coverage
# (edges) and features per target.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-30}"
shift || true
all_targets=(FuzzJSON FuzzBase64URL FuzzIDToken FuzzJWKSet FuzzRequestTarget FuzzProxyDecision FuzzRESP FuzzConfiguration FuzzAppleNotification
    FuzzStoredRecords FuzzWebSocketRelay FuzzRedirect FuzzResponseFraming)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
# Online CPUs, not the affinity mask: a run pinned with taskset must not change -j (and so every
# command line), which would rebuild everything.
jobs="${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}"

declare -A dictionary=(
    [FuzzJSON]=json [FuzzBase64URL]=jwt [FuzzIDToken]=jwt [FuzzJWKSet]=jwt [FuzzRequestTarget]=http
    [FuzzProxyDecision]=http [FuzzRESP]=resp [FuzzConfiguration]=yaml [FuzzAppleNotification]=jwt
    [FuzzStoredRecords]=json [FuzzWebSocketRelay]=websocket [FuzzRedirect]=http [FuzzResponseFraming]=http
)

configuration="${FUZZ_CONFIGURATION:-release}"
echo "== building the fuzz targets ($configuration, -sanitize=fuzzer,address)"
# Product by product: a plain `swift build` would also build the gateway's own executable, whose
# top-level code -parse-as-library refuses. Linked with the toolchain's lld (through a toolset):
# gold, SwiftPM's default here, stops with an internal error in its DWARF reader on these
# sanitized binaries.
lld="$(dirname "$(readlink -f "$(command -v swiftc)")")/ld.lld"
[ -x "$lld" ] || { echo "error: no ld.lld beside swiftc ($lld)" >&2; exit 1; }
mkdir -p Fuzz/.build/logs
# Written only when it changes: SwiftPM rebuilds everything when the toolset file is touched.
toolset="$(printf '{ "schemaVersion": "1.0", "linker": { "path": "%s" } }' "$lld")"
[ "$(cat Fuzz/.build/lld-toolset.json 2>/dev/null)" = "$toolset" ] || printf '%s' "$toolset" >Fuzz/.build/lld-toolset.json
# SwiftPM keeps the fuzz package's build plan (Fuzz/.build/<configuration>.yaml) when a source file
# is added to the gateway (a path dependency): the new file is left out and the build fails with
# "cannot find ... in scope". When the list of source files changed, the plan is made again.
sources="$(find Sources Fuzz/Sources -name '*.swift' | sort | sha256sum)"
if [ "$(cat "Fuzz/.build/sources-$configuration.sha256" 2>/dev/null)" != "$sources" ]; then
    rm -f "Fuzz/.build/$configuration.yaml"
    printf '%s' "$sources" >"Fuzz/.build/sources-$configuration.sha256"
fi
flags=(--toolset "$PWD/Fuzz/.build/lld-toolset.json"
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -enable-testing)
for target in "${targets[@]}"; do
    build_log="Fuzz/.build/logs/build-$target.$$.log"
    if ! (cd Fuzz && swift build -c "$configuration" -j "$jobs" --product "$target" "${flags[@]}") >"$build_log" 2>&1; then
        # The failed build's own output (errors first), not a second build's.
        echo "error: building $target failed; full output in $build_log" >&2
        grep -E "error:" "$build_log" | head -n 20 >&2 || true
        tail -n 40 "$build_log" >&2
        exit 1
    fi
done
bin="Fuzz/.build/$configuration"

limit=(-max_total_time="$seconds")
[ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
# A tiny ASan quarantine keeps memory flat over millions of inputs; leaks are not our question
# here (libFuzzer's leak check trips on the runtime's one-time caches).
export ASAN_OPTIONS="${ASAN_OPTIONS:-quarantine_size_mb=16:detect_leaks=0:abort_on_error=1}"
# libFuzzer reports a crash itself; Swift's backtracer would only add noise (and trips ASan).
export SWIFT_BACKTRACE="enable=no"

summary=()
# Logs of runs older than a week go (each run writes its own).
find Fuzz/.build/logs -name '*.log' -mtime +7 -delete 2>/dev/null || true
for target in "${targets[@]}"; do
    seeds="Fuzz/Corpus/$target"
    corpus="Fuzz/.build/corpus/$target"
    artifacts="Fuzz/.build/artifacts/$target/"
    # One log per run (process id): two runs at once (a long run beside `make test`) would
    # otherwise write into one file and lose the summary.
    log="Fuzz/.build/logs/$target.$$.log"
    mkdir -p "$corpus" "$artifacts"
    [ -d "$seeds" ] || { echo "error: no seed corpus at $seeds" >&2; exit 1; }
    echo "== $target (${FUZZ_RUNS:+$FUZZ_RUNS runs}${FUZZ_RUNS:+}$([ -z "${FUZZ_RUNS:-}" ] && echo "$seconds s"))"
    status=0
    # Inputs that once crashed a target (Fuzz/Regressions/<Target>) run first, every time.
    regressions=()
    [ -d "Fuzz/Regressions/$target" ] && regressions=("Fuzz/Regressions/$target")
    "$bin/$target" "${limit[@]}" -timeout=10 -rss_limit_mb=4096 -max_len=8192 -print_final_stats=1 \
        -dict="Fuzz/Dictionaries/${dictionary[$target]}.dict" -artifact_prefix="$artifacts" \
        "$corpus" "$seeds" "${regressions[@]}" >"$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
        tail -n 40 "$log"
        for crash in "$artifacts"*; do
            [ -f "$crash" ] || continue
            echo "input kept at $crash (base64 follows)"
            base64 -w0 "$crash"; echo
        done
        echo "error: $target failed (exit $status); full log in $log" >&2
        exit 1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    coverage=$(sed -nE 's/.*cov: ([0-9]+).*/\1/p' <<<"$last")
    features=$(sed -nE 's/.*ft: ([0-9]+).*/\1/p' <<<"$last")
    summary+=("$(printf '%-24s %12s %10s %8s %8s' "$target" "$runs" "$speed" "${coverage:-?}" "${features:-?}")")
done

printf '%-24s %12s %10s %8s %8s\n' target executions exec/s edges features
printf '%s\n' "${summary[@]}"
echo "reproduce: scripts/fuzz.sh $seconds ${*:-}"
