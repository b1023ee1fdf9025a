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

# on_stand_ins TALLY CUDART SRC SCRIPT: a tests/gpu script on the CPU (into $T/gpu.out, each line
# echoed with the script's name; its exit status in grc).  Its CUDA program is built by nvcc as on
# the GPU machine and runs against the stand-in libcudart (CUDART) and CUPTI (TALLY_CUPTI_PATH),
# with an nvidia-smi that says there is a GPU; PyTorch cases skip (PYTHON=false).  Skips (77)
# without nvcc, or under a sanitizer (the nvcc-built program is not instrumented).
on_stand_ins() {
	_nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
	[ -x "$_nvcc" ] || skip "no nvcc"
	ldd "$1" | grep -Eq 'lib(a|t)san' && skip "a sanitizer build: the nvcc-built program is not instrumented"
	mkdir -p "$T/bin"
	printf '#!/bin/sh\necho "GPU 0: stand-in"\n' >"$T/bin/nvidia-smi"
	chmod +x "$T/bin/nvidia-smi"
	_build=$(cd "$(dirname "$1")/../.." && pwd)
	PATH="$T/bin:$(dirname "$_nvcc"):$PATH" LD_LIBRARY_PATH="$2${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
		PYTHON=false bash "$3/tests/gpu/$4" "$_build" "$T/gpu" >"$T/gpu.out" 2>&1
	grc=$?
	sed "s/^/  $4: /" "$T/gpu.out"
}

# stand_in_case LABEL CASE: ok when the script of on_stand_ins printed "ok   CASE..."
stand_in_case() {
	grep -q "^ok   $2" "$T/gpu.out" && ok "$1 on the stand-ins: $2" || bad "$1 on the stand-ins: $2"
}

# stand_in_clean LABEL: ok when that script failed no check and exited 0
stand_in_clean() {
	! grep -q "^FAIL" "$T/gpu.out" && [ "$grc" -eq 0 ] && ok "$1 on the stand-ins: no failure" ||
		bad "$1 on the stand-ins: exit $grc"
}

# has_torch: $PY (python3 by default) imports PyTorch and sees a GPU through it
has_torch() { ${PY:-python3} -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; }

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
