#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each, one after another
# (one worker each), and prints executions per second and findings per
# target. Exits non-zero if any target found a crash, a hang or an
# allocation over the limits. Needs the nightly toolchain and cargo-fuzz
# (`cargo install cargo-fuzz`).
#
#   scripts/fuzz.sh 1800                    # every target, 30 minutes each
#   scripts/fuzz.sh 60 frame_codec sse_chat # some targets
#
# The committed seeds (fuzz/corpus/TARGET) are only read; the corpus grows
# in $FUZZ_WORK (default fuzz/work, ignored by git), and findings land in
# $FUZZ_WORK/artifacts/TARGET. A finding replays with
# `cargo +nightly fuzz run TARGET FILE`.
set -u -o pipefail

if [ $# -lt 1 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
    echo "usage: $0 SECONDS [TARGET...]" >&2
    exit 2
fi
seconds=$1
shift

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/fuzz" || exit 2
work=${FUZZ_WORK:-$root/fuzz/work}
# Limits per run: resident memory (ASan included), any single allocation
# (the protocol's largest cap is 8 MiB; inputs are at most a few KiB), and
# the time one input may take.
rss_limit_mb=${FUZZ_RSS_LIMIT_MB:-2048}
malloc_limit_mb=${FUZZ_MALLOC_LIMIT_MB:-64}
timeout=${FUZZ_TIMEOUT:-10}

if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo +nightly fuzz list)
fi

export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
for target in "${targets[@]}"; do
    cargo +nightly fuzz build "$target" || exit 2
done
bin="$root/fuzz/target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release"

failed=0
summary=()
for target in "${targets[@]}"; do
    corpus="$work/corpus/$target"
    artifacts="$work/artifacts/$target"
    log="$work/logs/$target.log"
    mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
    echo "== $target: ${seconds}s (log: $log)"
    dict=()
    if [ "$target" != config_toml ]; then
        dict=(-dict=dict/json.dict)
    fi
    # New inputs go to the first corpus directory; the seeds stay as they are.
    # The binaries built above run directly, so that a source change while
    # this script runs cannot start a rebuild between targets.
    "$bin/$target" "${dict[@]}" "$corpus" "corpus/$target" \
        -max_total_time="$seconds" -rss_limit_mb="$rss_limit_mb" \
        -malloc_limit_mb="$malloc_limit_mb" -timeout="$timeout" \
        -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1
    status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    findings=$(find "$artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' \
        -o -name 'oom-*' -o -name 'leak-*' -o -name 'slow-unit-*' \) | wc -l)
    if [ "$status" -ne 0 ] || [ "$findings" -gt 0 ]; then
        failed=1
        grep -m 3 -E 'panicked|ERROR: libFuzzer|SUMMARY' "$log" | sed 's/^/   /'
    fi
    line=$(printf '%-18s %10s execs %8s execs/s  %-10s findings: %s (exit %s)' \
        "$target" "${execs:-?}" "${rate:-?}" "${cov:-cov: ?}" "$findings" "$status")
    echo "$line"
    summary+=("$line")
done

echo
echo "== summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
exit "$failed"
