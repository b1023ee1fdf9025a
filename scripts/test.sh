#!/bin/sh
# The test suite, as CI runs it (`make test`): the plain build and its tests, then the same tests
# under AddressSanitizer+UBSan (less the browser test: the page is the same, its generation is
# fuzzed there), the pipeline tests under ThreadSanitizer, and the reader's fuzzer
# and of stats/export/merge, each for a bounded time (TALLY_FUZZ_SECONDS, default 60).  Stops at the first failure.
# The plain build's ctest also holds the house's checks: includes only downward (include-graph),
# no external function that no other file uses (unused-functions, nm over the objects).
set -eu
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
fuzz_seconds=${TALLY_FUZZ_SECONDS:-60}
step() { printf '\n==== %s\n' "$*"; }
t0=$(date +%s)

step "dependencies"
scripts/install-deps.sh # every group: build, test, browser, slurm, fuzz, machines

step "formatting (.clang-format)"
command -v clang-format >/dev/null 2>&1 ||
	{ echo "test: clang-format is missing: scripts/install-deps.sh test installs it" >&2; exit 1; }
git ls-files 'src/*.[ch]' 'tests/*.[ch]' 'bench/*.c' | xargs clang-format --dry-run --Werror

step "the report page (src/page/html): syntax and hygiene"
scripts/check-html.sh

step "build and test (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTALLY_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure --no-tests=error -j"$jobs"

step "AddressSanitizer + UndefinedBehaviorSanitizer"
# the browser, Slurm and bundle/package tests check integration, not memory, and the scale tests
# time growth, which a sanitizer's own cost blurs: plain build only
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTALLY_SANITIZE=address,undefined -DTALLY_BENCH=OFF \
	-DTALLY_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
	ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs" -LE "browser|slurm|dist|fresh|container|scale"

step "ThreadSanitizer (pipeline and collector tests)"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DTALLY_SANITIZE=thread -DTALLY_BENCH=OFF -DTALLY_WERROR=ON >/dev/null
cmake --build build-tsan -j"$jobs"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	ctest --test-dir build-tsan --output-on-failure --no-tests=error -j"$jobs" -L tsan

if [ "$fuzz_seconds" -gt 0 ] && command -v clang >/dev/null 2>&1; then
	step "fuzzing the reader for ${fuzz_seconds}s (libFuzzer)"
	CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTALLY_FUZZ=ON \
		-DTALLY_SANITIZE=address,undefined -DTALLY_BENCH=OFF >/dev/null
	cmake --build build-fuzz -j"$jobs" --target fuzz-reader fuzz-report
	for target in fuzz-reader fuzz-report; do
		rm -rf build-fuzz/corpus && mkdir -p build-fuzz/corpus
		cp tests/fuzz/corpus/* build-fuzz/corpus/
		echo "-- $target"
		# -malloc_limit_mb and -timeout low enough that a reader whose memory or time is not
		# bounded by its input (a declared count, a resync, a demangled name) is a finding: no
		# input of 64 KiB may ask for 256 MiB at once.  The RSS limit is for slow growth; it
		# leaves room for ASan's quarantine (kept small) and the fuzzer's own growing corpus,
		# which took a 512 MiB limit past its end in 30 s with 29 MiB of live heap.  Findings
		# are written under build-fuzz/, never into the tree.
		if ! ASAN_OPTIONS=quarantine_size_mb=32 build-fuzz/tests/$target -max_total_time="$fuzz_seconds" \
			-max_len=65536 -timeout=2 -malloc_limit_mb=256 -rss_limit_mb=1536 \
			-artifact_prefix=build-fuzz/ -print_final_stats=1 build-fuzz/corpus >build-fuzz/$target.log 2>&1; then
			tail -n 60 build-fuzz/$target.log
			exit 1
		fi
		tail -n 6 build-fuzz/$target.log
	done
fi
step "all tests passed in $(( $(date +%s) - t0 )) s"
