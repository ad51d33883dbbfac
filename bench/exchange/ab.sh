#!/usr/bin/env bash
# Two gateway builds measured alternately in one run, for changes smaller than this host's drift
# (its speed moves by ±10% within the hour, so two runs of run.sh minutes apart cannot tell a 5%
# change from noise).
#
# Each round starts a fresh gateway of each build in turn (A B, then B A, ...), each on its own key
# prefix of the same Redis with tokens of its own, and runs run.sh's rows on it: new users'
# sign-ins, returning sign-ins, refresh chains, GET /auth/v1/user and the GET /auth/v1/settings
# floor (HTTP/1.1, wrk with driver.lua on core 1; the gateway on core 0). For each row it prints
# the gateway's CPU time per answer in microseconds, each round's and the mean for A and B, B's
# mean over A's (below 1 means B costs less), the median of the rounds' own B / A, and in how many
# rounds B cost less: this host's speed moves between minutes, so a change is settled when most
# rounds agree, not by the means alone. A second table gives each row's answers per second the
# same way (above 1 means B answers more), and a third how busy the gateway's core was: a change
# that keeps the core busier (less time waiting for Redis) raises the rate, not the CPU per answer.
#
# Reproduce: bench/exchange/ab.sh A_BINARY B_BINARY [tokens] [concurrency]
#            (AB_ROUNDS=3 rounds, REQUESTS=50000 GET requests per row, refresh chains of ROUNDS=3)
#   e.g.     git stash; make release; cp .build/release/authgate /tmp/authgate-old
#            git stash pop; make release
#            bench/exchange/ab.sh /tmp/authgate-old .build/release/authgate
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "$#" -lt 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
    echo "usage: bench/exchange/ab.sh A_BINARY B_BINARY [tokens] [concurrency]  (both executable)" >&2
    exit 2
fi
binary_a="$1"
binary_b="$2"
COUNT="${3:-4000}"
CONCURRENCY="${4:-64}"
AB_ROUNDS="${AB_ROUNDS:-3}"
ROUNDS="${ROUNDS:-3}"
REQUESTS="${REQUESTS:-50000}"
scripts/install-deps.sh libhiredis-dev libjemalloc-dev redis-server redis-tools util-linux openssl bc wrk >/dev/null
. scripts/lib.sh
release_build ExchangeBench

. bench/exchange/common.sh
start_work exchange-ab
start_redis 1
"$binary_b" keys generate --out "$work/key.pem" --kid bench >/dev/null

rows="new returning refresh user floor"
# measure SIDE ROUND: a fresh gateway of SIDE's build, every row on it; appends each row's µs per
# answer to $work/SIDE-ROW.
measure() {
    local side="$1" round="$2" dir="$work/$1$2"
    mkdir -p "$dir"
    .build/release/ExchangeBench prepare "$dir" "$COUNT" >/dev/null
    if [ "$side" = a ]; then GATEWAY="$binary_a"; else GATEWAY="$binary_b"; fi
    write_config "$dir" ", key_prefix: \"$side$round:\""
    start_gateway "$dir"
    base="http://127.0.0.1:$gateway_port"
    phase new drive signin "$dir/tokens.txt" "$dir/sessions.txt"
    phase returning drive signin "$dir/returning.txt"
    phase refresh drive refresh "$dir/sessions.txt" "$ROUNDS"
    phase user drive user "$dir/sessions.txt" "$REQUESTS"
    phase floor drive settings "$dir/sessions.txt" "$REQUESTS"
    kill "$gateway_pid"; wait "$gateway_pid" 2>/dev/null || true
    for row in $rows; do
        local errors="${row}_errors"
        if [ "${!errors}" != "0" ]; then
            echo "error: $side ($GATEWAY) round $round, row $row: ${!errors} answers were not 200" >&2
            exit 1
        fi
        us_per_answer "$row" >>"$work/$side-$row"
        local rate="${row}_rate" busy="${row}_busy"
        echo "${!rate}" >>"$work/$side-$row.rate"
        echo "${!busy}" >>"$work/$side-$row.busy"
    done
    echo "round $round, $side done" >&2
}

for round in $(seq 1 "$AB_ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then measure a "$round"; measure b "$round"; else measure b "$round"; measure a "$round"; fi
done

echo
echo "machine: $(machine_description), $(date -u +%Y-%m-%d); $COUNT tokens, $CONCURRENCY connections, $AB_ROUNDS rounds"
echo "A: $binary_a"
echo "B: $binary_b"
# table TITLE SUFFIX BETTER: one line per row of the values in $work/{a,b}-ROW.SUFFIX: A's and B's
# means and rounds, B / A of the means, the median of the rounds' own B / A, and in how many rounds
# B was better (BETTER: "less" or "more").
table() {
    local title="$1" suffix="$2" better="$3" row mean_a mean_b list_a list_b paired median wins
    printf '%-26s %-30s %-30s %8s %8s %8s\n' "$title" "A: mean (rounds)" "B: mean (rounds)" "B / A" "median" "B $( [ "$better" = less ] && echo "<" || echo ">" ) A"
    for row in $rows; do
        mean_a="$(awk '{s += $1} END {printf "%.1f", s / NR}' "$work/a-$row$suffix")"
        mean_b="$(awk '{s += $1} END {printf "%.1f", s / NR}' "$work/b-$row$suffix")"
        list_a="$(awk '{printf "%s%.0f", (NR > 1 ? " " : ""), $1}' "$work/a-$row$suffix")"
        list_b="$(awk '{printf "%s%.0f", (NR > 1 ? " " : ""), $1}' "$work/b-$row$suffix")"
        # Each round's B / A (the two ran minutes apart, so the host's slower drift cancels), their
        # median, and in how many rounds B was better.
        paired="$(paste "$work/a-$row$suffix" "$work/b-$row$suffix" | awk '{print $2 / $1}' | sort -g)"
        median="$(echo "$paired" | awk '{v[NR] = $1} END {printf "%.3f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}')"
        if [ "$better" = less ]; then
            wins="$(echo "$paired" | awk '$1 < 1 {n++} END {printf "%d/%d", n, NR}')"
        else
            wins="$(echo "$paired" | awk '$1 > 1 {n++} END {printf "%d/%d", n, NR}')"
        fi
        printf '%-26s %-30s %-30s %8.3f %8s %8s\n' "$(row_label "$row")" "$mean_a ($list_a)" "$mean_b ($list_b)" \
            "$(echo "$mean_b / $mean_a" | bc -l)" "$median" "$wins"
    done
}
table "µs of gateway CPU/answer" "" less
echo
table "answers per second" ".rate" more
echo
table "gateway core busy (%)" ".busy" more
echo "reproduce: bench/exchange/ab.sh $binary_a $binary_b $COUNT $CONCURRENCY"
