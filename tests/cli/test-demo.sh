#!/bin/sh
# scripts/demo.sh, the README's first command, without a GPU, in a copy of the tree whose
# build/src/cli/tally is the tally under test (TALLY_DEMO_PREBUILT) and whose build steps are
# stand-ins (an install-deps.sh that installs nothing, a cmake on PATH that takes a few seconds):
# - it says what it does while it builds: a line with the time and the build's percentage;
# - the diagnosis of the first kept recording, and what the host did in its longest GPU gap
#   (gpu_idle_why), come before everything else it prints (doctor, check, the summaries);
# - it can be run twice: both runs exit 0 and write the exports and the page;
# - it stops with a non-zero status, saying which step, when tally export or tally report fails,
#   and then prints no "report: PATH".
# Usage: test-demo.sh TALLY SRCDIR
set -u
TALLY=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") SRC=$2
. "$(dirname "$0")/../lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

D=$T/tree
mkdir -p "$D/scripts" "$D/tests/data" "$D/build/src/cli" "$T/bin"
cp "$SRC/scripts/demo.sh" "$D/scripts/"
cp "$SRC"/tests/data/*.tally "$D/tests/data/"
printf '#!/bin/sh\necho "installing nothing: $*"\n' >"$D/scripts/install-deps.sh"
# cmake: configure at once; build: three seconds, saying 42%
cat >"$T/bin/cmake" <<'SH'
#!/bin/sh
case "$*" in *--build*) echo "[ 42%] Building C object x.o"; sleep 3; ln -sf "$TALLY_UNDER_TEST" build/src/cli/tally ;; esac
exit 0
SH
chmod +x "$D/scripts/install-deps.sh" "$T/bin/cmake"
# no nvidia-smi on PATH: the no-GPU path
P="$T/bin:/usr/bin:/bin"

run_demo() { # NAME ENV...: the demo's output in $T/NAME.log, its status in $T/NAME.rc
	_n=$1
	shift
	env PATH="$P" TALLY_UNDER_TEST="$TALLY" "$@" sh "$D/scripts/demo.sh" >"$T/$_n.log" 2>&1
	echo $? >"$T/$_n.rc"
}

run_demo first TALLY_DEMO_PROGRESS_S=1
[ "$(cat "$T/first.rc")" = 0 ] && ok "first run: exit 0" || { bad "first run: exit $(cat "$T/first.rc")"; tail -n 30 "$T/first.log"; }
grep -Eq '^  \.\.\. compiling: [0-9]+ s, 42% done$' "$T/first.log" &&
	ok "it says how the build goes while it builds" || bad "no progress line while building"
# the order: diagnosis, then gpu_idle_why of the longest gap, before doctor, check and the rest
order=$(grep -n '^==== ' "$T/first.log" | sed -n '/no GPU here/,$p' | sed 's/^\([0-9]*\):==== \(tally [a-z]*\|why the GPU idled\|no GPU\).*/\2/' | head -n 4 | tr '\n' '|')
[ "$order" = "no GPU|tally stats|why the GPU idled|tally stats|" ] &&
	grep -q '^==== tally stats -r diagnosis tests/data/' "$T/first.log" &&
	ok "diagnosis and gpu_idle_why of the longest gap come first" || bad "the first steps are: $order"
first_diag=$(grep -n 'Diagnosis: What Cost the Most Time' "$T/first.log" | head -n1 | cut -d: -f1)
doctor=$(grep -n '^==== tally doctor' "$T/first.log" | cut -d: -f1)
[ -n "$first_diag" ] && [ -n "$doctor" ] && [ "$first_diag" -lt "$doctor" ] &&
	ok "the diagnosis is printed before tally doctor" || bad "diagnosis at line ${first_diag:-none}, doctor at ${doctor:-none}"
grep -q 'Why the GPU was idle: the host during each gap' "$T/first.log" &&
	grep -Eq '^ +1 .* gap +1 ' "$T/first.log" && ok "gpu_idle_why lists the longest gap" ||
	bad "no gpu_idle_why gap row"
[ -s "$D/demo-out/gpu-h100-host.html" ] && [ -s "$D/demo-out/gpu-h100-host.json" ] &&
	[ -s "$D/demo-out/gpu-h100-host.sqlite" ] && [ -s "$D/demo-out/gpu-h100-ranks.kineto/rank-1.json" ] &&
	ok "the page and the exports are written" || bad "missing outputs: $(ls "$D/demo-out")"

run_demo second TALLY_DEMO_PREBUILT=1
[ "$(cat "$T/second.rc")" = 0 ] && ! grep -q 'exists' "$T/second.log" &&
	ok "a second run: exit 0, nothing refused" || { bad "second run: exit $(cat "$T/second.rc")"; grep -n 'error\|FAILED' "$T/second.log"; }

# a step that fails stops the demo with a non-zero status: tally report, then tally export
for cmd in report export; do
	cat >"$T/bin/tally-failing" <<SH
#!/bin/sh
[ "\$1" = $cmd ] && { echo "tally $cmd: error: disk full" >&2; exit 4; }
exec "$TALLY" "\$@"
SH
	chmod +x "$T/bin/tally-failing"
	ln -sf "$T/bin/tally-failing" "$D/build/src/cli/tally"
	run_demo "fail-$cmd" TALLY_DEMO_PREBUILT=1
	rc=$(cat "$T/fail-$cmd.rc")
	[ "$rc" != 0 ] && grep -q "^demo: FAILED: .*$cmd" "$T/fail-$cmd.log" && ! grep -q '^report: ' "$T/fail-$cmd.log" &&
		ok "tally $cmd fails: the demo exits $rc and says so" || { bad "tally $cmd fails: exit $rc"; tail -n 5 "$T/fail-$cmd.log"; }
done
finish test-demo
