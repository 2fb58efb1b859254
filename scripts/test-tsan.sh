#!/usr/bin/env bash
# Builds the threaded tests with ThreadSanitizer (GCC) in build-tsan and runs them: several
# runners on threads share one loaded program, with and without thread pools of their own
# (tests/hostile/test_concurrency.cpp), the thread pool and the kernels it splits
# (tests/kernels), runners batching their decode steps through one StepScheduler
# (tests/runner/test_step_scheduler.cpp), and batched decode steps on a pool of two, whose
# sequences run their attention and other unbatched steps on the pool's threads at once
# (tests/io/test_decode_batch.cpp).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${HFSTATIC_JOBS:-$(nproc)}"
build="${HFSTATIC_TSAN_BUILD:-build-tsan}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHFSTATIC_SANITIZE=thread -DHFSTATIC_BUILD_BENCH=OFF
cmake --build "$build" -j"$jobs" --target test_concurrency test_kernels test_runner test_io
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
"$build/tests/hostile/test_concurrency"
"$build/tests/kernels/test_kernels"
"$build/tests/runner/test_runner" --gtest_filter='StepScheduler*:*StepSchedulerRunners*'
"$build/tests/io/test_io" --gtest_filter='*DecodeBatch*'
