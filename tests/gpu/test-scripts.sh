#!/bin/sh
# The GPU scripts' own logic, on a machine without a GPU: the helpers of tests/lib.sh say a failed,
# an empty and a skipped run apart; every tests/gpu script skips (77) where nvidia-smi sees no
# GPU; device-session.sh exits with what the parts it ran said (a failed part fails the session);
# report.sh, run on stand-ins (an nvidia-smi that lists one GPU, a "python" whose torch loop is
# fakeapp through the stand-in CUPTI), says "skip" and exits 77 when there is no Chromium, and
# checks the page when there is; the cost benches' arithmetic on a stand-in workload whose costs
# are set.  What the scripts check on a GPU needs the GPU machine.
# Usage: test-scripts.sh TALLY FAKEAPP FAKECUPTI SRC
set -u
. "$(dirname "$0")/../lib.sh"
TALLY=$1 FAKEAPP=$2 SRC=$4
export TALLY_CUPTI_PATH=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
B=$(cd "$(dirname "$TALLY")/../.." && pwd)

# lib RC NAME SNIPPET: SNIPPET run by sh after tests/lib.sh, in $T/lib, must exit RC
lib() {
	mkdir -p "$T/lib"
	(cd "$T/lib" && T=$T/lib sh -c ". '$SRC/tests/lib.sh'; $3" >"$T/lib.out" 2>&1)
	rc=$?
	[ $rc -eq "$1" ] && ok "lib.sh: $2 (exit $rc)" || { bad "lib.sh: $2: exit $rc, want $1"; cat "$T/lib.out"; }
}
lib 0 "a check passed" 'ok a; finish'
lib 1 "a check failed among passes" 'ok a; bad b; ok c; finish'
lib 1 "no check ran" 'finish'
grep -q "^FAIL no check ran" "$T/lib.out" && ok "lib.sh: says no check ran" || bad "lib.sh: no check ran, not said"
lib 77 "every case skipped" 'skipped a; skipped b; finish'
lib 0 "a case skipped, another passed" 'skipped a; ok b; finish'
lib 77 "skip" 'skip "nothing here"; ok unreachable; finish'
lib 0 "expect_rc: the status wanted" "expect_rc three 3 sh -c 'exit 3'; finish"
lib 1 "expect_rc: another status" "expect_rc three 0 sh -c 'echo said; exit 3'; finish"
grep -q "^said" "$T/lib.out" && ok "expect_rc: the command's output shown" || bad "expect_rc: output not shown"
lib 1 "expect_rc: killed by a signal" "expect_rc crash 0 sh -c 'kill -SEGV \$\$'; finish"
grep -q "killed by a signal" "$T/lib.out" && ok "expect_rc: the signal said" || bad "expect_rc: signal not said"

# Stand-in nvidia-smi: one that fails (no GPU), one that lists a GPU.
mkdir -p "$T/nogpu" "$T/gpu"
printf '#!/bin/sh\necho "NVIDIA-SMI has failed" >&2\nexit 9\n' >"$T/nogpu/nvidia-smi"
printf '#!/bin/sh\necho "GPU 0: stand-in (UUID: GPU-0)"\n' >"$T/gpu/nvidia-smi"
chmod +x "$T/nogpu/nvidia-smi" "$T/gpu/nvidia-smi"
lib 77 "need_gpu without one" "PATH='$T/nogpu':\$PATH need_gpu; ok unreachable; finish"
lib 0 "need_gpu with one" "PATH='$T/gpu':\$PATH need_gpu; ok here; finish"

# Every GPU script skips cleanly without a GPU, before it needs its arguments.
for s in "$SRC"/tests/gpu/*.sh; do
	case $s in */test-scripts.sh) continue ;; esac
	name=$(basename "$s")
	(cd "$T" && PATH="$T/nogpu:$PATH" OUT="$T/skip-out" "$s" >"$T/skip.out" 2>&1)
	rc=$?
	[ $rc -eq 77 ] && grep -q "^SKIP: no GPU" "$T/skip.out" && ! grep -q "^FAIL" "$T/skip.out" &&
		ok "$name: no GPU, SKIP (77)" || { bad "$name: no GPU: exit $rc"; cat "$T/skip.out"; }
done

# device-session.sh in a tree of stand-ins: each part says what it is told to (RC_<part>).
R=$T/repo
mkdir -p "$R/tests/gpu" "$R/build/src/cli" "$R/bench" "$T/ds"
cp "$SRC/tests/lib.sh" "$R/tests/"
cp "$SRC/tests/gpu/device-session.sh" "$R/tests/gpu/"
for part in run stacks report; do
	printf '#!/bin/sh\necho "ok   %s: stand-in"\nrc=${RC_%s:-0}\n[ $rc = 77 ] && echo "SKIP: told to"\nexit $rc\n' \
		"$part" "$part" >"$R/tests/gpu/$part.sh"
	chmod +x "$R/tests/gpu/$part.sh"
done
printf '#!/bin/sh\necho "doctor: stand-in"\nexit ${RC_doctor:-0}\n' >"$R/build/src/cli/tally"
chmod +x "$R/build/src/cli/tally"
# session WANT NAME VAR=VALUE...: device-session.sh suite with those statuses must exit WANT
session() {
	want=$1 name=$2
	shift 2
	rm -rf "$T/ds" && mkdir -p "$T/ds"
	(cd "$R" && env PATH="$T/gpu:$PATH" OUT="$T/ds" "$@" tests/gpu/device-session.sh suite >"$T/ds.out" 2>&1)
	rc=$?
	[ $rc -eq "$want" ] && ok "device-session: $name (exit $rc)" ||
		{ bad "device-session: $name: exit $rc, want $want"; cat "$T/ds.out"; }
}
session 0 "every part passed"
session 1 "stacks failed" RC_stacks=1
grep -q "^FAIL stacks (stacks.sh): exit 1" "$T/ds.out" && ok "device-session: names the failed part" ||
	{ bad "device-session: the failed part not named"; cat "$T/ds.out"; }
session 1 "the suite failed, run in the background" RC_run=3
session 1 "the doctor says recording cannot proceed" RC_doctor=1
session 0 "the report skipped, the rest passed" RC_report=77
grep -q "^skip report (report.sh): SKIP: told to" "$T/ds.out" && ok "device-session: says what skipped" ||
	{ bad "device-session: the skip not said"; cat "$T/ds.out"; }
session 77 "every part skipped" RC_run=77 RC_stacks=77 RC_report=77
(cd "$R" && PATH="$T/gpu:$PATH" OUT="$T/ds" tests/gpu/device-session.sh frobnicate >"$T/ds.out" 2>&1)
[ $? -eq 2 ] && ok "device-session: an unknown mode is a usage error (exit 2)" || bad "device-session: unknown mode"

# report.sh on stand-ins: torch_loop.py N is fakeapp launching N + 1 kernels (the adds and
# torch.zeros' fill), recorded through the stand-in CUPTI.
mkdir -p "$T/py"
cat >"$T/py/python" <<EOF
#!/bin/sh
case \$1 in
-c) exit 0 ;; # import torch; assert torch.cuda.is_available()
*/torch_loop.py) exec "$FAKEAPP" exit \$((\$2 + 1)) ;;
*) exec python3 "\$@" ;;
esac
EOF
chmod +x "$T/py/python"
(PATH="$T/gpu:$PATH" PYTHON="$T/py/python" CHROME="" "$SRC/tests/gpu/report.sh" "$B" "$T/rep" >"$T/rep.out" 2>&1)
rc=$?
[ $rc -eq 77 ] && grep -q "^skip torch: no chromium" "$T/rep.out" && ! grep -q "^ok" "$T/rep.out" &&
	[ -s "$T/rep/torch.html" ] && ok "report.sh without Chromium: page written, skip said, exit 77" ||
	{ bad "report.sh without Chromium: exit $rc"; cat "$T/rep.out"; }
# fulldisk.sh on stand-ins: its torch loop is fakeapp launching the adds, saying them as
# torch_loop.py does; 4 M of them fill the 8 MiB tmpfs (2.5 M made a file of 7.2 MiB in one CI
# run: the records' encoded size depends on their times).  Needs a tmpfs it may mount.
cat >"$T/py/python-adds" <<EOF
#!/bin/sh
case \$1 in
-c) exit 0 ;;
*/torch_loop.py) "$FAKEAPP" exit \$((\$2 + 1)) >/dev/null && echo "pid \$\$ adds \$2 nvtx_ranges 0 loop_ns 0" ;;
*) exec python3 "\$@" ;;
esac
EOF
chmod +x "$T/py/python-adds"
(PATH="$T/gpu:$PATH" PYTHON="$T/py/python-adds" TALLY_FULLDISK_ADDS=4000000 \
	"$SRC/tests/gpu/fulldisk.sh" "$B" "$T/fd" >"$T/fd.out" 2>&1)
rc=$?
if [ $rc -eq 77 ]; then
	skipped "fulldisk.sh on stand-ins: $(grep '^SKIP' "$T/fd.out")"
elif [ $rc -eq 0 ] && grep -q "^ok   the final ledger names the failure" "$T/fd.out"; then
	ok "fulldisk.sh on stand-ins: the full disk's final ledger checked (exit 0)"
else
	bad "fulldisk.sh on stand-ins: exit $rc"
	cat "$T/fd.out"
fi

# The cost benches' arithmetic (bench/gpu-lib.sh), on a stand-in workload whose time per launch
# is set by what tally record puts in its environment: 3 us untraced, 4 under tally, 4.2 with
# --sample native, 4.1 with osrt, 4.08 with GPU metrics (chunks: half of each).  The ratios must
# be those, the baseline's repeat 1.000, and no row lost (a configuration named "tally" once had
# its numbers removed with the runs' traces).
mkdir -p "$T/fb/src/cli" "$T/fb/gpu"
ln -s "$TALLY" "$T/fb/src/cli/tally"
cat >"$T/fb/gpu/workload" <<'EOF'
#!/bin/sh
per=3000
case "${LD_PRELOAD:-}" in *libtally*) per=4000 ;; esac
case "${TALLY_SAMPLE:-}" in native) per=4200 ;; esac
case "${TALLY_TRACE:-}" in *osrt*) per=4100 ;; esac
[ -n "${TALLY_GPU_METRICS:-}" ] && per=4080
echo "thread 1 launched $2 loop_ns $((per * $2)) chunk_p10_ns $((per * $2 / 2))"
EOF
chmod +x "$T/fb/gpu/workload"
BENCH_CPUS= PYTHON=/nonexistent "$SRC/bench/sampling-overhead.sh" "$T/fb" 2 >"$T/bench.out" 2>&1
grep -q '^| launch loop, 200k kernels  | 3.000 (3.000-3.000) | 4.000 (4.000-4.000) | 4.000 (4.000-4.000) | 4.200 (4.200-4.200) | 4.100 (4.100-4.100) | 1.000 (1.000) | 1.050 (1.050) | 1.025 (1.025) | 1.000 (1.000) |$' "$T/bench.out" &&
	ok "sampling-overhead.sh on a stand-in: its costs and ratios" || { bad "sampling-overhead.sh on a stand-in"; cat "$T/bench.out"; }
(PATH="$T/gpu:$PATH" BENCH_CPUS= BENCH_KEY=chunk_p10_ns PYTHON=/nonexistent \
	"$SRC/bench/metrics-overhead.sh" "$T/fb" 2 >"$T/bench.out" 2>&1)
grep -q '^| launch loop, 500k kernels  | 1.500 (1.500-1.500) | 2.000 (2.000-2.000) | 2.040 (2.040-2.040) | 1.020 (1.020) | 1.000 (1.000) |$' "$T/bench.out" &&
	ok "metrics-overhead.sh on a stand-in, by chunks: its costs and ratios" || { bad "metrics-overhead.sh on a stand-in"; cat "$T/bench.out"; }

CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -n "$CHROME" ]; then
	(PATH="$T/gpu:$PATH" PYTHON="$T/py/python" "$SRC/tests/gpu/report.sh" "$B" "$T/rep2" >"$T/rep.out" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && grep -q "^ok   torch: " "$T/rep.out" && ok "report.sh with Chromium: the page checked (exit 0)" ||
		{ bad "report.sh with Chromium: exit $rc"; cat "$T/rep.out"; }
else
	skipped "report.sh with Chromium: no chromium here"
fi
finish
