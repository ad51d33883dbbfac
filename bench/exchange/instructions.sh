#!/usr/bin/env bash
# Instructions per answer for each row of bench/exchange/run.sh, counted by valgrind's callgrind:
# a unit that does not move with this VM's speed or its neighbours, so one run judges a change that
# time could only judge over many (run.sh and ab.sh measure time; count.sh counts system calls and
# allocations). The gateway runs under callgrind, which counts every instruction it executes, in
# every thread, its libraries' and the Swift runtime's included; the kernel's work is not counted.
#
# The release gateway (a copy without debug information, which valgrind 3.19 cannot read) runs
# under `valgrind --tool=callgrind` with counting switched on only while a row runs
# (`callgrind_control`), after a warm-up of every row that is not counted. Redis and wrk
# (bench/exchange/driver.lua) run as in run.sh. One connection by default: each answer's own
# instructions, none shared with answers in flight beside it, and no idle requests at a row's end,
# so two runs of one build agree closely (CONCURRENCY=64 counts what batching saves, less steadily).
# Background work (the revocation feed's polls, about ten a second) is counted too: callgrind slows
# the gateway some fifty times, so a row lasts seconds; it adds well under 1% to a row.
#
# Reproduce: bench/exchange/instructions.sh [tokens] [GET requests]      (300 and 1000 by default)
#            GATEWAY=/path/to/authgate bench/exchange/instructions.sh     (another build)
#            COMPARE=/path/to/other/authgate bench/exchange/instructions.sh   (A/B: GATEWAY, or this
#              tree's build, as A, then that build as B on the same tokens' kind, and B / A per row)
#            TOP=15 bench/exchange/instructions.sh   (each row's 15 functions that executed the most
#              instructions themselves, per answer)
#            KEEP=DIR bench/exchange/instructions.sh  (keeps each row's callgrind file in DIR, for
#              `callgrind_annotate --inclusive=yes DIR/FILE`, or `--tree=calling` for what each
#              function calls and how often; `--tree=caller` misses most callers of runtime functions)
set -euo pipefail
cd "$(dirname "$0")/../.."

COUNT="${1:-300}"
REQUESTS="${2:-1000}"
CONCURRENCY="${CONCURRENCY:-1}"
WARM="${WARM:-50}"
TOP="${TOP:-0}"
scripts/install-deps.sh libhiredis-dev libjemalloc-dev redis-server redis-tools util-linux bc wrk valgrind gcc binutils >/dev/null
. scripts/lib.sh
release_build authgate
release_build ExchangeBench
gateway_builds
. bench/exchange/common.sh
start_work exchange-instructions
start_redis 1
prepare_callgrind
.build/release/authgate keys generate --out "$work/key.pem" --kid bench >/dev/null
rows=(new returning refresh user floor)

# measure INDEX BUILD: BUILD under callgrind, with tokens of its own; sets Ir_<row>_<INDEX>
# (instructions per answer) and errors_<row>_<INDEX>, and writes each row's callgrind file.
measure() {
    local index="$1" build="$2" dir="$work/build-$1"
    mkdir -p "$dir"
    redis-cli -p "$redis_port" flushall >/dev/null
    .build/release/ExchangeBench prepare "$dir" "$((WARM + COUNT))" >/dev/null
    local file
    for file in tokens returning; do
        head -n "$WARM" "$dir/$file.txt" >"$dir/warm-$file.txt"
        tail -n "+$((WARM + 1))" "$dir/$file.txt" >"$dir/counted-$file.txt"
    done
    write_config "$dir" ""
    base="http://127.0.0.1:$gateway_port"
    start_counted_gateway "$dir" "$build"
    # The warm-up: every row once, not counted (first calls fill the runtime's metadata caches).
    drive signin "$dir/warm-tokens.txt" "$dir/warm-sessions.txt" >/dev/null
    drive signin "$dir/warm-returning.txt" >/dev/null
    drive refresh "$dir/warm-sessions.txt" 1 >/dev/null
    drive user "$dir/warm-sessions.txt" 200 >/dev/null
    drive settings "$dir/warm-sessions.txt" 200 >/dev/null
    local row answers result
    for row in "${rows[@]}"; do
        counting_on
        case $row in
            new) answers="$COUNT"; result="$(drive signin "$dir/counted-tokens.txt" "$dir/sessions.txt")";;
            returning) answers="$COUNT"; result="$(drive signin "$dir/counted-returning.txt")";;
            refresh) answers="$COUNT"; result="$(drive refresh "$dir/sessions.txt" 1)";;
            user) answers="$REQUESTS"; result="$(drive user "$dir/sessions.txt" "$REQUESTS")";;
            floor) answers="$REQUESTS"; result="$(drive settings "$dir/sessions.txt" "$REQUESTS")";;
        esac
        counting_off "$dir" "$row" "$index"
        printf -v "Ir_${row}_${index}" '%s' "$(echo "$counted_total / $answers" | bc)"
        printf -v "errors_${row}_${index}" '%s' "$(echo "$result" | cut -d, -f4)"
        printf -v "answers_${row}" '%s' "$answers"
        if [ "$TOP" -gt 0 ]; then top_functions "$counted_file" "$answers" >"$dir/top-$row.txt"; fi
    done
    kill "$gateway_pid" 2>/dev/null || true
    wait "$gateway_pid" 2>/dev/null || true
}

# top_functions FILE ANSWERS: the TOP functions with the most instructions of their own, per answer,
# their names demangled.
top_functions() {
    callgrind_annotate "$1" 2>/dev/null | awk -v n="$TOP" -v answers="$2" '
        /file:function/ {listing = 1; next}
        listing && /^ *[0-9,]+ / && shown < n {
            cost = $1; gsub(",", "", cost)
            name = $0; sub(/^[^?.\/]*[?.\/][^:]*:/, "", name); sub(/ \[[^]]*\]$/, "", name)
            printf "%10.0f  %s\n", cost / answers, name; shown++
        }' | swift demangle --simplified | cut -c1-150
}

for index in "${!builds[@]}"; do measure "$index" "${builds[$index]}"; done

echo "machine: $(machine_description), $(date -u +%Y-%m-%d); $COUNT tokens, $REQUESTS GET requests, $CONCURRENCY connection(s), $WARM of each row first as a warm-up; gateway under callgrind"
if [ "${#builds[@]}" -eq 2 ]; then
    echo "A: ${builds[0]}"
    echo "B: ${builds[1]}"
    printf '%-24s %8s %14s %14s %8s %8s\n' "instructions per answer" "answers" "A" "B" "B / A" "non-200"
else
    printf '%-24s %8s %14s %8s\n' "instructions per answer" "answers" "build" "non-200"
fi
for row in "${rows[@]}"; do
    a="Ir_${row}_0" answers="answers_${row}" errors="errors_${row}_0"
    if [ "${#builds[@]}" -eq 2 ]; then
        b="Ir_${row}_1" errors_b="errors_${row}_1"
        printf '%-24s %8s %14s %14s %8.3f %8s\n' "$(row_label "$row")" "${!answers}" "${!a}" "${!b}" \
            "$(echo "${!b} / ${!a}" | bc -l)" "$((${!errors} + ${!errors_b}))"
    else
        printf '%-24s %8s %14s %8s\n' "$(row_label "$row")" "${!answers}" "${!a}" "${!errors}"
    fi
done
if [ "$TOP" -gt 0 ]; then
    for row in "${rows[@]}"; do
        echo
        echo "$(row_label "$row"): the $TOP functions with the most instructions of their own, per answer (${builds[-1]})"
        cat "$work/build-$((${#builds[@]} - 1))/top-$row.txt"
    done
fi
echo "reproduce: ${COMPARE:+COMPARE=$COMPARE }${GATEWAY:+GATEWAY=$GATEWAY }bench/exchange/instructions.sh $COUNT $REQUESTS"
