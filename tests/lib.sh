# The shell test scripts' shared helpers (POSIX sh: /bin/sh and bash scripts source it).
#   . "$(dirname "$0")/../lib.sh"        (from tests/DIR/script.sh)
#
# ok TEXT                a check passed: "ok   TEXT"
# bad TEXT               a check failed: "FAIL TEXT"
# skipped TEXT           a case that could not be checked here: "skip TEXT" (not a pass)
# expect_rc NAME WANT CMD...
#                        a check of CMD's exit status; its stdout and stderr land in $T/out and
#                        $T/err (the script makes $T), and are shown when the status is wrong
# skip WHY               nothing can be checked here: "SKIP: WHY", exit 77 (ctest's skip code)
# need_gpu               skip unless nvidia-smi lists a GPU (the tests/gpu scripts' preamble)
# finish [NAME]          the summary line and the exit status: 1 when a check failed, or when no
#                        check ran at all (a script that checked nothing proved nothing); 77 when
#                        no check ran because every case was skipped; else 0
pass=0 fail=0 skips=0

ok() {
	printf 'ok   %s\n' "$1"
	pass=$((pass + 1))
}

bad() {
	printf 'FAIL %s\n' "$1"
	fail=$((fail + 1))
}

skipped() {
	printf 'skip %s\n' "$1"
	skips=$((skips + 1))
}

expect_rc() {
	_name=$1 _want=$2
	shift 2
	"$@" >"$T/out" 2>"$T/err"
	_rc=$?
	if [ "$_rc" -eq "$_want" ]; then
		ok "$_name (exit $_rc)"
	else
		bad "$_name: exit $_rc, want $_want"
		cat "$T/out" "$T/err"
	fi
	# a crash is never an acceptable answer, whatever the code
	[ "$_rc" -lt 128 ] || [ "$_rc" -eq "$_want" ] || bad "$_name: killed by a signal ($_rc)"
}

skip() {
	echo "SKIP: $1"
	exit 77
}

need_gpu() {
	command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 ||
		skip "no GPU here (nvidia-smi -L failed): this runs on a machine with one"
}

finish() {
	echo "${1:-$(basename "$0")}: $pass passed, $fail failed, $skips skipped"
	[ "$fail" -eq 0 ] || exit 1
	[ "$pass" -eq 0 ] && [ "$skips" -gt 0 ] && skip "every case was skipped: nothing was checked"
	[ "$pass" -gt 0 ] || {
		echo "FAIL no check ran"
		exit 1
	}
	exit 0
}
