#!/usr/bin/env bash
# Builds the libFuzzer harnesses in build-fuzz (clang, ASan + UBSan), writes the seeds, replays
# the regression files of tests/regressions/<harness>/, then fuzzes each harness for a bounded
# time. Exits non-zero when any harness reports a finding (crash, sanitizer report, uncaught
# exception, leak, timeout or out-of-memory); the input that caused it is kept in
# build-fuzz/fuzz/findings/<harness>/ and the log in build-fuzz/fuzz/logs/<harness>.log.
# Usage: fuzz/run.sh [SECONDS_PER_HARNESS (default 60)] [HARNESS...]
#   harnesses: program checkpoint tokenizer quant args
# Environment: HFSTATIC_TOOL, an hfstatic binary for the seeds (default build/hfstatic, else
# one is built in build-fuzz); HFSTATIC_JOBS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
[ $# -eq 0 ] || shift
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(program checkpoint tokenizer quant args)
jobs="${HFSTATIC_JOBS:-$(nproc)}"
build=build-fuzz
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHFSTATIC_FUZZ=ON -DHFSTATIC_BUILD_TESTS=OFF -DHFSTATIC_BUILD_BENCH=OFF >/dev/null
targets=(fuzzers)
tool="${HFSTATIC_TOOL:-build/hfstatic}"
if [ ! -x "$tool" ]; then targets+=(hfstatic_cli); tool="$build/hfstatic"; fi
cmake --build "$build" -j"$jobs" --target "${targets[@]}"
fz="$build/fuzz"
bash fuzz/make-seeds.sh "$fz/seeds" "$tool"
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
# A fixed seed keeps CI runs repeatable; HFSTATIC_FUZZ_SEED=0 picks a random one.
flags=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -print_final_stats=1 -seed="${HFSTATIC_FUZZ_SEED:-1}")
status=0
for h in "${harnesses[@]}"; do
  bin="$fz/fuzz_$h"
  mkdir -p "$fz/corpus/$h" "$fz/findings/$h" "$fz/logs"
  dict=(); [ ! -f "fuzz/$h.dict" ] || dict=(-dict="fuzz/$h.dict")
  # Every regression file must still be handled cleanly.
  regressions=(tests/regressions/"$h"/*)
  if [ -e "${regressions[0]}" ]; then
    if ! "$bin" "${flags[@]}" "${regressions[@]}" >"$fz/logs/$h-regressions.log" 2>&1; then
      echo "fuzz/$h: a regression file fails again (log: $fz/logs/$h-regressions.log)"; tail -n 40 "$fz/logs/$h-regressions.log"
      status=1
    fi
  fi
  echo "fuzz/$h: ${secs}s from $(ls "$fz/seeds/$h" | wc -l) seeds"
  if "$bin" "${flags[@]}" "${dict[@]}" -max_total_time="$secs" -artifact_prefix="$fz/findings/$h/" \
      "$fz/corpus/$h" "$fz/seeds/$h" >"$fz/logs/$h.log" 2>&1; then
    grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|INITED|DONE" "$fz/logs/$h.log" | sed "s|^|  |" || true
  else
    echo "fuzz/$h: FINDING (log: $fz/logs/$h.log, input in $fz/findings/$h/)"
    grep -E "ERROR|SUMMARY|runtime error|==[0-9]+==|#[0-9]+ 0x" "$fz/logs/$h.log" | head -n 40 || true
    status=1
  fi
done
exit $status
