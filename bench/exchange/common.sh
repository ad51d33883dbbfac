# What bench/exchange/run.sh and ab.sh share: a gateway's configuration and start, the load
# generators, and one measured phase; and what both instruction counts (bench/exchange and
# bench/proxy instructions.sh) share: a gateway under callgrind and its counted rows. Source it after scripts/lib.sh, with $work, $redis_port,
# $GATEWAY, $CONCURRENCY and $REQUESTS set.

# write_config DIR EXTRA_REDIS_SETTINGS: the gateway's configuration in DIR (tokens from DIR's key set).
write_config() {
    gateway_port="$(free_port)"
    cat >"$1/authgate.yaml" <<YAML
server: { host: 127.0.0.1, port: $gateway_port }
store: { kind: redis, redis: { url: "redis://127.0.0.1:$redis_port/0", pool_size: ${POOL_SIZE:-2}, record_cache_size: ${RECORD_CACHE_SIZE:-10000} $2 } }
tokens: { signing_keys: [ { kid: bench, file: $work/key.pem } ] }
providers:
  apple: { enabled: true, audiences: [com.example.authgate.bench], jwks_file: apple-jwks.json }
rate_limits: { token: off, signup: off, nonce: off }
logging: { level: warning }
YAML
}
# start_gateway DIR [perf]: authgate serve on core 0 with DIR's configuration; sets gateway_pid.
start_gateway() {
    if [ "${2:-}" = "perf" ]; then
        taskset -c 0 perf record -F 999 -g -e cpu-clock -o "$1/perf.data" "$GATEWAY" serve --config "$1/authgate.yaml" 2>"$1/authgate.log" &
    else
        taskset -c 0 "$GATEWAY" serve --config "$1/authgate.yaml" 2>"$1/authgate.log" &
    fi
    gateway_pid=$!
    pids+=($gateway_pid)
    wait_for_gateway "$1" "$GATEWAY"
}
# wait_for_gateway DIR BUILD [SECONDS]: waits until the gateway started from DIR ($gateway_pid, on
# $gateway_port) answers /readyz; exits with the end of DIR/authgate.log (valgrind's stack lines
# left out) when the gateway exits first, or when SECONDS pass (no limit without).
wait_for_gateway() {
    local polls=0 limit=$((${3:-0} * 20))
    until curl -fs "http://127.0.0.1:$gateway_port/readyz" >/dev/null 2>&1; do
        if ! kill -0 "$gateway_pid" 2>/dev/null || { [ "$limit" -gt 0 ] && [ "$polls" -ge "$limit" ]; }; then
            echo "error: the gateway ($2) exited or was not ready in time; its log:" >&2
            grep -v '^==[0-9]*==    \(at\|by\) 0x' "$1/authgate.log" | tail -20 >&2
            exit 1
        fi
        sleep 0.05
        polls=$((polls + 1))
    done
}
ticks_per_second="$(getconf CLK_TCK)"
# The gateway's CPU time so far and the part of it in the kernel, in clock ticks, from one read
# of /proc/<pid>/stat: utime + stime, then stime.
gateway_ticks() { awk '{print $14 + $15, $15}' "/proc/$gateway_pid/stat"; }
# From one read of /proc/stat, clock ticks so far: core 1's busy and total (busy is everything but
# idle and iowait), then core 0's steal (the eighth value: time the hypervisor ran something else
# while this VM's core 0 wanted to run).
core_ticks() {
    awk '$1 == "cpu0" {steal = $9} $1 == "cpu1" {busy = $2 + $3 + $4 + $7 + $8 + $9; total = $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}
        END {print busy, total, steal}' /proc/stat
}
# Core 0's steal ticks summed over every phase so far, with the phases' wall time: whether a slow
# run lost its time to the hypervisor or ran slower in the time it had.
phases_steal_ticks=0
phases_seconds=0
# drive MODE FILE [ARG]: wrk on core 1 against $base with driver.lua; prints "rate,p50,p99,errors".
drive() {
    taskset -c 1 wrk -t1 -c"$CONCURRENCY" -d600s -s bench/exchange/driver.lua "$base" -- "$@" | awk '/^RESULT / {print $2}'
}
# drive_h2 PATH: h2load on core 1 against $base PATH, REQUESTS requests over HTTP/2 (prior knowledge);
# prints "rate,mean latency (ms),-,non-2xx or failed requests".
drive_h2() {
    local streams=$((CONCURRENCY / 8))
    if [ "$streams" -lt 1 ]; then streams=1; fi
    taskset -c 1 h2load -c 8 -m "$streams" -t 1 -n "$REQUESTS" "$base$1" 2>&1 | h2load_summary | awk '{printf "%s,%s,-,%s\n", $1, $2, $3}'
}
# ECDSA P-256 signatures per second on core 0 right now, in thousands (`openssl speed`, 1 s),
# while core 1 is busy too (signing as well), as it is during a phase: the host's own speed next
# to a row. This VM's slow spells (up to 40% for minutes) slow crypto-heavy rows most and barely
# show in `openssl speed` on an otherwise idle machine; two busy cores sharing one physical core
# would show here.
host_sign_rate() {
    taskset -c 1 openssl speed -seconds 2 ecdsap256 >/dev/null 2>&1 &
    local load=$!
    taskset -c 0 openssl speed -seconds 1 ecdsap256 2>/dev/null | awk '/256 bits ecdsa \(nistp256\)/ {printf "%.1f", $(NF-1) / 1000}'
    wait "$load" 2>/dev/null || true
}

# add_malloc_probe EVENT: a uprobe named EVENT (GROUP:NAME) on every call of the malloc that serves
# $GATEWAY: jemalloc's (libc's for a build without it), at its symbol's address (a probe by name
# would also catch jemalloc's PLT entry). The caller removes it (remove_malloc_probe). perf allows
# one event of a name across groups, so a probe left by an interrupted run (and the profile's,
# which earlier versions left in place) is removed first.
add_malloc_probe() {
    local allocator
    allocator="$(ldd "$GATEWAY" | awk '$1 ~ /^libjemalloc\.so/ {print $3}')"
    [ -n "$allocator" ] || allocator="$(ldd "$GATEWAY" | awk '$1 ~ /^libc\.so/ {print $3}')"
    perf probe -l 2>/dev/null | awk '$1 ~ /^authgate_[a-z0-9_]*:malloc$/ {print $1}' | while read -r stale; do
        perf probe -q -d "$stale" 2>/dev/null || true
    done
    perf probe -q -x "$allocator" -a "$1=0x$(nm -D --defined-only "$allocator" | awk '$3 == "malloc" {print $1}')"
}

# remove_malloc_probe EVENT: removes the probe add_malloc_probe made.
remove_malloc_probe() { perf probe -q -d "$1" 2>/dev/null || true; }

# phase NAME COMMAND...: runs the load generator; sets NAME_rate, _p50, _p99, _errors, _busy, _kernel
# (the kernel's share of the gateway's CPU time in the phase: system calls, sockets, page faults), _core1,
# and with HOST_PROBE=1 NAME_host: host_sign_rate just before and just after the phase.
phase() {
    local name="$1"; shift
    local host_before="" host_after=""
    if [ "${HOST_PROBE:-0}" = "1" ]; then host_before="$(host_sign_rate)"; fi
    local before started result rate p50 p99 errors ended after cores_before cores_after kernel_before kernel_after
    local perf_pid=""
    if [ "${PROFILE_PHASE:-}" = "$name" ]; then
        if [ "${PROFILE_EVENT:-}" = "malloc" ]; then
            # Every call of malloc with its stack (where a phase allocates), not CPU samples.
            add_malloc_probe authgate_bench:malloc
            perf record -c 1 -g -e authgate_bench:malloc -p "$gateway_pid" -o "$work/perf-$name.data" 2>/dev/null &
        else
            perf record -F 999 -g -e cpu-clock -p "$gateway_pid" -o "$work/perf-$name.data" 2>/dev/null &
        fi
        perf_pid=$!
    fi
    read -r before kernel_before <<<"$(gateway_ticks)"; started="$(date +%s.%N)"; cores_before="$(core_ticks)"
    result="$("$@")"
    ended="$(date +%s.%N)"; read -r after kernel_after <<<"$(gateway_ticks)"; cores_after="$(core_ticks)"
    phases_seconds="$(echo "$phases_seconds + $ended - $started" | bc -l)"
    if [ -n "$perf_pid" ]; then
        kill -INT "$perf_pid" 2>/dev/null || true; wait "$perf_pid" 2>/dev/null || true
        if [ "${PROFILE_EVENT:-}" = "malloc" ]; then remove_malloc_probe authgate_bench:malloc; fi
        (perf report -i "$work/perf-$name.data" --stdio --no-children --sort dso,symbol -g none 2>/dev/null | grep -v "^#" | grep "%" | head -60) >"$work/profile-$name.txt" || true
        if [ -n "${PROFILE_KEEP:-}" ]; then cp "$work/perf-$name.data" "$PROFILE_KEEP"; fi
    fi
    if [ "${HOST_PROBE:-0}" = "1" ]; then host_after="$(host_sign_rate)"; fi
    printf -v "${name}_host" '%s' "$host_before/$host_after"
    IFS=, read -r rate p50 p99 errors <<<"$result"
    printf -v "${name}_rate" '%s' "$rate"; printf -v "${name}_p50" '%s' "$p50"; printf -v "${name}_p99" '%s' "$p99"
    printf -v "${name}_errors" '%s' "$errors"
    printf -v "${name}_busy" '%.0f' "$(echo "100 * ($after - $before) / $ticks_per_second / ($ended - $started)" | bc -l)"
    if [ "$after" -gt "$before" ]; then
        printf -v "${name}_kernel" '%.0f' "$(echo "100 * ($kernel_after - $kernel_before) / ($after - $before)" | bc -l)"
    else
        printf -v "${name}_kernel" '%s' "-"
    fi
    read -r b0 t0 s0 <<<"$cores_before"; read -r b1 t1 s1 <<<"$cores_after"
    phases_steal_ticks=$((phases_steal_ticks + s1 - s0))
    printf -v "${name}_core1" '%.0f' "$(echo "100 * ($b1 - $b0) / ($t1 - $t0)" | bc -l)"
}
# row_label NAME: the label a phase's row is printed under.
row_label() {
    case $1 in
        new) echo "sign-in, new user";; returning) echo "sign-in, returning user";; refresh) echo "refresh";; user) echo "GET /user";;
        floor) echo "floor: GET /settings";; floor_h2) echo "floor over HTTP/2";;
        acked_new) echo "sign-in, new, 1 replica ack";; acked_refresh) echo "refresh, 1 replica ack";;
    esac
}
# us_per_answer NAME: the gateway's CPU time per answer in phase NAME, in microseconds (its busy
# share of the phase's wall time over the rate).
us_per_answer() {
    local rate="${1}_rate" busy="${1}_busy"
    echo "10000 * ${!busy} / ${!rate}" | bc -l
}

# prepare_callgrind: Debian 12's valgrind 3.19 cannot read Swift's debug information and dies at
# libdispatch's `sigsuspend`; a counted gateway runs as a copy without debug information, with
# bench/exchange/sigsuspend-copy.c preloaded (built here, once per run, into $work).
prepare_callgrind() {
    gcc -shared -fPIC -O2 -o "$work/sigsuspend-copy.so" bench/exchange/sigsuspend-copy.c
}
# start_counted_gateway DIR BUILD: BUILD (a copy without debug information) under callgrind with
# counting off, on core 0, with DIR/authgate.yaml (written first, on $gateway_port); sets
# gateway_pid and waits until it is ready.
start_counted_gateway() {
    strip --strip-debug -o "$1/authgate" "$2"
    LD_PRELOAD="$work/sigsuspend-copy.so" taskset -c 0 valgrind --tool=callgrind --instr-atstart=no \
        --callgrind-out-file="$1/callgrind.out" "$1/authgate" serve --config "$1/authgate.yaml" 2>"$1/authgate.log" &
    gateway_pid=$!
    pids+=("$gateway_pid")
    counted_dumps=0
    wait_for_gateway "$1" "$2 under valgrind" 120
}
# counting_on: the counted gateway's count zeroed and switched on.
counting_on() {
    callgrind_control -z "$gateway_pid" >/dev/null 2>&1
    callgrind_control -i on "$gateway_pid" >/dev/null 2>&1
}
# counting_off DIR ROW INDEX: counting switched off and the count dumped as ROW; sets counted_file
# (the dump) and counted_total (its instructions); with KEEP set, the dump is kept there as
# callgrind-INDEX-ROW.out.
counting_off() {
    callgrind_control -i off "$gateway_pid" >/dev/null 2>&1
    callgrind_control -d "$2" "$gateway_pid" >/dev/null 2>&1
    counted_dumps=$((counted_dumps + 1))
    counted_file="$1/callgrind.out.$counted_dumps"
    counted_total="$(callgrind_annotate "$counted_file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
    if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP"; cp "$counted_file" "$KEEP/callgrind-$3-$2.out"; fi
}
