#!/usr/bin/env bash
# What one answer of each row costs in countable units, which, unlike time, do not move with this
# VM's speed: system calls and calls of malloc. A change to the hot path can be judged by these in
# one run, where a rate needs several (time is ab.sh's and run.sh's measure).
#
# The release gateway on core 0 with Redis and wrk (bench/exchange/driver.lua) on core 1, as in
# run.sh; for each row, `perf stat -p` counts on the gateway while the row runs:
# raw_syscalls:sys_enter, and a uprobe on the malloc that serves the gateway (jemalloc's, or
# libc's for a build without it). The uprobe traps into the kernel on every allocation, so the
# gateway's time here means nothing and is not shown.
#
# Reproduce: bench/exchange/count.sh [tokens] [GET requests]     (2000 and 10000 by default)
#            GATEWAY=/path/to/other/authgate bench/exchange/count.sh   (another build)
#            SYSCALLS=1 bench/exchange/count.sh   (each row's system calls by name, per answer:
#            the client's read and writev, Redis batches, getrandom, epoll, futex, ...)
set -euo pipefail
cd "$(dirname "$0")/../.."

COUNT="${1:-2000}"
REQUESTS="${2:-10000}"
CONCURRENCY=64
scripts/install-deps.sh libhiredis-dev libjemalloc-dev redis-server redis-tools util-linux bc wrk linux-perf >/dev/null
. scripts/lib.sh
release_build authgate
GATEWAY="${GATEWAY:-.build/release/authgate}"
release_build ExchangeBench

. bench/exchange/common.sh
start_work exchange-count
probe_group="authgate_count_$$"
remove_probes() { remove_malloc_probe "$probe_group:malloc"; }
trap 'remove_probes; stop_work' EXIT

start_redis 1
.build/release/ExchangeBench prepare "$work" "$COUNT" >/dev/null
"$GATEWAY" keys generate --out "$work/key.pem" --kid bench >/dev/null
write_config "$work" ""
start_gateway "$work"
base="http://127.0.0.1:$gateway_port"

add_malloc_probe "$probe_group:malloc"

# count NAME ANSWERS COMMAND...: runs the load generator under perf stat; prints the row.
count() {
    local name="$1" answers="$2"; shift 2
    local perf_pid
    # perf stat starts with its counters off and turns them on and off when told through a FIFO,
    # answering each command on another: the counts cover the row and nothing else.
    rm -f "$work/control" "$work/ack"; mkfifo "$work/control" "$work/ack"
    perf stat -D -1 --control "fifo:$work/control,$work/ack" -x, -e raw_syscalls:sys_enter -e "$probe_group:malloc" \
        ${by_name:+-e "$by_name"} -p "$gateway_pid" -o "$work/stat-$name.txt" 2>/dev/null &
    perf_pid=$!
    local control ack line
    exec {control}>"$work/control" {ack}<"$work/ack"
    echo enable >&"$control"; read -r line <&"$ack"
    local result; result="$("$@")"
    echo disable >&"$control"; read -r line <&"$ack"
    exec {control}>&- {ack}<&-
    kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
    local errors; errors="$(echo "$result" | cut -d, -f4)"
    local syscalls mallocs
    syscalls="$(awk -F, '$3 == "raw_syscalls:sys_enter" {print $1}' "$work/stat-$name.txt")"
    mallocs="$(awk -F, -v e="$probe_group:malloc" '$3 == e {print $1}' "$work/stat-$name.txt")"
    printf '%-24s %8s %14.1f %12.1f %8s\n' "$(row_label "$name")" "$answers" \
        "$(echo "$syscalls / $answers" | bc -l)" "$(echo "$mallocs / $answers" | bc -l)" "$errors"
    if [ -n "$by_name" ]; then
        awk -F, -v n="$answers" '$3 ~ /^syscalls:sys_enter_/ && $1 > 0 {
            sub(/^syscalls:sys_enter_/, "", $3); printf "    %-20s %25.2f\n", $3, $1 / n }' "$work/stat-$name.txt"
    fi
}

# With SYSCALLS=1, the system calls an event loop, a pipelined Redis client and a CSPRNG make,
# counted by name (a tracepoint each).
by_name=""
if [ "${SYSCALLS:-0}" = "1" ]; then
    for call in read write readv writev recvfrom sendto recvmsg sendmsg epoll_wait epoll_pwait epoll_ctl futex \
        getrandom eventfd2 timerfd_settime mmap munmap madvise brk sched_yield clock_nanosleep; do
        by_name="${by_name:+$by_name,}syscalls:sys_enter_$call"
    done
fi

echo "machine: $(machine_description), $(date -u +%Y-%m-%d); $COUNT tokens, $REQUESTS GET requests, $CONCURRENCY connections; gateway on 1 core"
printf '%-24s %8s %14s %12s %8s\n' "per answer" "answers" "system calls" "malloc" "non-200"
count new "$COUNT" drive signin "$work/tokens.txt" "$work/sessions.txt"
count returning "$COUNT" drive signin "$work/returning.txt"
count refresh "$COUNT" drive refresh "$work/sessions.txt" 1
count user "$REQUESTS" drive user "$work/sessions.txt" "$REQUESTS"
count floor "$REQUESTS" drive settings "$work/sessions.txt" "$REQUESTS"
echo "reproduce: bench/exchange/count.sh $COUNT $REQUESTS"
