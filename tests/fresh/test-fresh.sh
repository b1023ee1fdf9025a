#!/bin/sh
# A newcomer's first command on a truly fresh machine: a pristine Debian 12 root (mmdebstrap
# --variant=apt: Essential packages and apt, no make, git or python3), in two variants run side
# by side: minimal, and with python3 preinstalled as cloud images have it.  Each gets a copy of
# this tree (what git tracks, and what it does not ignore), /usr/local/cuda bound in, and runs
# the README's first command (the first line of its first ```sh block) exactly as written, as
# root, by chroot; then `tally doctor --json` and `tally report` on a trace kept in tests/data/.
# The demo must print the diagnosis first (before doctor), naming a cause: a line or a rank.
# Whatever a step needs and the scripts do not install fails here.
#
# The roots are made once and kept as tarballs (tests/support/debian-root.sh, under
# $TALLY_FRESH_CACHE, default /var/cache/tally-test, outside the tree), made again when absent;
# each run unpacks them afresh.  apt's downloaded .debs are kept there too (one cache per
# variant), so a run installs from the cache what it downloaded before; apt still installs every
# package.  Skips (77), saying why, when not root, without mmdebstrap, unshare or CUDA, or when
# no root can be made (no mirror).
# Usage: test-fresh.sh SRC
set -u
. "$(dirname "$0")/../lib.sh"
SRC=$1
CACHE=${TALLY_FRESH_CACHE:-/var/cache/tally-test}
CUDA=${CUDA_HOME:-/usr/local/cuda}
[ "$(id -u)" = 0 ] || skip "chroot and mounts need root"
unshare -m true 2>/dev/null || skip "no mount namespace here (unshare -m)"
[ -f "$CUDA/include/cupti_activity.h" ] || skip "no CUDA toolkit under $CUDA"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# The pristine roots (tests/support/debian-root.sh keeps them as tarballs)
for v in minimal python3; do
	"$(dirname "$0")/../support/debian-root.sh" $v >"$T/root-$v.path"
	rc=$?
	[ $rc -eq 0 ] || { [ $rc -eq 77 ] && skip "no pristine Debian root (above)"; bad "debian-root.sh $v"; finish; }
done

cmd=$(sed -n '/^```sh$/{n;p;q}' "$SRC/README.md" | sed 's/[[:space:]]*#.*//')
[ -n "$cmd" ] || { bad "no \`\`\`sh block in README.md"; finish; }
echo "the README's first command: $cmd"

# the tree as a fresh clone has it (plus what is not committed yet and not ignored)
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$SRC" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf "$T/tree.tar" --no-recursion)
else
	tar -C "$SRC" -cf "$T/tree.tar" --exclude='./build*' --exclude=./demo-out --exclude=./.git .
fi

# variant: unpack, mount, run the command, then doctor and report; output in $T/VARIANT.log
variant() {
	v=$1 R=$T/root-$1
	mkdir -p "$R" "$CACHE/apt-$v"
	tar -C "$R" -xf "$(cat "$T/root-$v.path")"
	mkdir -p "$R/root/tally" "$R$CUDA" "$R/out"
	tar -C "$R/root/tally" -xf "$T/tree.tar"
	cp -L /etc/resolv.conf "$R/etc/resolv.conf"
	# dpkg without an fsync per file, as Debian's own container images set it up
	echo force-unsafe-io >"$R/etc/dpkg/dpkg.cfg.d/unsafe-io"
	# one run at a time per apt cache (apt locks it): another test run waits here
	# shellcheck disable=SC2016
	flock "$CACHE/apt-$v.lock" unshare -m sh -c '
		R=$1 CUDA=$2 APT=$3 cmd=$4
		mount --make-rprivate /
		mount --rbind /dev "$R/dev" && mount -t proc proc "$R/proc" &&
			mount --bind "$CUDA" "$R$CUDA" && mount -o remount,ro,bind "$R$CUDA" &&
			mount --bind "$APT" "$R/var/cache/apt/archives" || exit 90
		chroot "$R" /usr/bin/env -i HOME=/root TERM=dumb \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			sh -c "cd /root/tally && $cmd" || exit $?
		chroot "$R" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin sh -c "
			cd /root/tally
			build/src/cli/tally doctor --json -o /out/run-%p >/out/doctor.json; echo \$? >/out/doctor.rc
			build/src/cli/tally report -q -o /out/kept.html tests/data/gpu-h200-torch.tally; echo \$? >/out/report.rc"
	' sh "$R" "$CUDA" "$CACHE/apt-$v" "$cmd" >"$T/$v.log" 2>&1
	echo $? >"$T/$v.rc"
}

t0=$(date +%s)
variant minimal &
p1=$!
variant python3 &
p2=$!
wait $p1 $p2
echo "both variants in $(($(date +%s) - t0)) s"

for v in minimal python3; do
	R=$T/root-$v rc=$(cat "$T/$v.rc")
	if [ "$rc" = 0 ]; then
		ok "$v: '$cmd' exits 0 on a pristine Debian 12 root"
	else
		bad "$v: '$cmd' exited $rc"
		tail -n 30 "$T/$v.log" | sed 's/^/    /'
		continue
	fi
	# what the demo itself says it made: the page of the kept trace
	page=$(sed -n 's/^report: //p' "$T/$v.log" | tail -1)
	[ -n "$page" ] && [ -s "$R$page" ] && ok "$v: the demo's page $page" || bad "$v: the demo printed no page"
	grep -q "^==== tally doctor" "$T/$v.log" && ok "$v: the demo ran tally doctor" || bad "$v: no doctor in the demo"
	# the three-minute diagnosis first: before doctor, naming a cause (a line, a rank)
	diag=$(grep -n 'Diagnosis: What Cost the Most Time' "$T/$v.log" | head -n1 | cut -d: -f1)
	doc=$(grep -n '^==== tally doctor' "$T/$v.log" | head -n1 | cut -d: -f1)
	[ -n "$diag" ] && [ -n "$doc" ] && [ "$diag" -lt "$doc" ] &&
		grep -Eq 'host was in .*:[0-9]+\)|straggler: RANK=[0-9]+ is the slowest' "$T/$v.log" &&
		grep -q 'Why the GPU was idle: the host during each gap' "$T/$v.log" &&
		ok "$v: the diagnosis comes first and names a cause ($(grep -Eo 'straggler: RANK=[0-9]+|host was in [^,]*' "$T/$v.log" | head -n2 | tr '\n' ';'))" ||
		bad "$v: no diagnosis naming a cause before doctor (diagnosis at line ${diag:-none}, doctor at ${doc:-none})"
	# the doctor after the demo: it says what it saw (no GPU here), as JSON the schema describes
	python3 - "$R/out/doctor.json" "$(cat "$R/out/doctor.rc" 2>/dev/null)" <<'PY' &&
import json, sys
d = json.load(open(sys.argv[1]))
ids = {c["id"]: c["status"] for c in d["checks"]}
assert ids.get("tool.collector") == "ok", ids
assert (sys.argv[2] == "0") == d["can_record"] and sys.argv[2] in ("0", "1"), sys.argv[2]
PY
		ok "$v: tally doctor --json (exit $(cat "$R/out/doctor.rc"), as its can_record says), the collector found beside tally" ||
		{ bad "$v: tally doctor"; head -c 600 "$R/out/doctor.json" 2>/dev/null; }
	[ "$(cat "$R/out/report.rc" 2>/dev/null)" = 0 ] && head -c 200 "$R/out/kept.html" | grep -qi "<!doctype html" &&
		grep -q "gpu-h200-torch" "$R/out/kept.html" &&
		ok "$v: tally report on the kept trace: $(wc -c <"$R/out/kept.html") bytes of HTML" ||
		bad "$v: tally report on the kept trace"
	# what was not there before the command, and is now: the demo's needs, no more
	[ -x "$R/usr/bin/cmake" ] && [ ! -e "$R/usr/bin/chromium" ] && [ ! -e "$R/usr/sbin/slurmctld" ] &&
		[ ! -e "$R/usr/bin/clang" ] && ok "$v: the demo installed CMake, not Chromium, Slurm or clang" ||
		bad "$v: the demo installed more (or less) than it needs"
done
if [ "$(cat "$T/minimal.rc")" = 0 ]; then
	[ -x "$T/root-minimal/usr/bin/python3" ] && bad "minimal: python3 was installed (the demo needs none)" ||
		ok "minimal: still no python3 (the demo needs none)"
fi
finish
