#!/bin/sh
# The relocatable bundle (make dist) on its own: packed from BUILD by scripts/dist.sh, unpacked
# into a temporary directory and mounted read-only elsewhere (as `-v /opt/tally:/opt/tally:ro`
# does), then run from there with no build tree on any path: its ELF files need only glibc
# <= 2.34, tally finds its collector beside itself, and it records the stand-in CUPTI: given by
# TALLY_CUPTI_PATH, bundled beside the collector, or the program's own.
# Usage: test-bundle.sh BUILD SRC FAKEAPP FAKECUPTI13 (the stand-in named libcupti.so.13)
set -u
BUILD=$1 SRC=$2
T=$(mktemp -d)
mounted=""
trap '[ -z "$mounted" ] || umount "$mounted"; rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
N=2000

# Everything the bundle is run with is copied out of the build tree first.
mkdir -p "$T/app" "$T/own" "$T/out"
cp "$3" "$T/app/fakeapp"
cp "$4" "$T/app/libcupti.so.13"
cp "$4" "$T/own/libcupti.so.13"
tarball=$("$SRC/scripts/dist.sh" "$BUILD" "$T/dist") || { bad "dist.sh"; finish; }
case "$tarball" in */tally-*-linux-x86_64.tar.gz) ok "packed $(basename "$tarball")" ;; *) bad "archive name $tarball" ;; esac
mkdir -p "$T/unpacked/deep/er"
tar -C "$T/unpacked/deep/er" --strip-components=1 -xzf "$tarball"
B=$T/unpacked/deep/er
for f in bin/tally lib/tally/libtally.so share/doc/tally/README.md share/doc/tally/LICENSE \
	share/doc/tally/docs/record.md share/doc/tally/examples/slurm/job.sh share/man/man1/tally.1.gz \
	share/man/man1/tally-record.1.gz; do
	[ -f "$B/$f" ] && ok "bundle has $f" || bad "bundle lacks $f"
done
cmp -s "$B/share/doc/tally/LICENSE" "$SRC/LICENSE" && ok "the bundle's LICENSE is the tree's" || bad "LICENSE differs"
[ -x "$B/share/doc/tally/examples/slurm/job.sh" ] && ok "examples/slurm/job.sh is executable in the bundle" ||
	bad "examples/slurm/job.sh lost its executable bit"
docs=$(cd "$B/share/doc/tally/docs" && pwd -P)
"$B/bin/tally" --help | grep -qF "$docs/ has a page" && ok "tally --help points at the bundle's docs ($docs)" ||
	{ bad "tally --help does not point at $docs"; "$B/bin/tally" --help | tail -1; }
top=$(tar -tzf "$tarball" | head -1)
[ "${top%%/*}" = "$(basename "$tarball" .tar.gz)" ] && ok "unpacks to ${top%%/*}/" || bad "unpacks to $top"
[ ! -e "$B/lib/tally/libcupti.so.13" ] && ok "no CUPTI without WITH_CUPTI" || bad "CUPTI bundled unasked"
"$SRC/tests/dist/elf-check.sh" "$B/bin/tally" "$B/lib/tally/libtally.so" || bad "the bundle's ELF files (above)"

# Read-only, at another path; where mounting is not allowed, the unpacked tree itself.
mkdir -p "$T/opt/tally"
if mount --bind "$B" "$T/opt/tally" 2>/dev/null; then
	mounted=$T/opt/tally
	mount -o remount,ro,bind "$T/opt/tally" 2>/dev/null
	touch "$T/opt/tally/x" 2>/dev/null && bad "the mount is writable" || ok "mounted read-only at another path"
	B=$T/opt/tally
else
	echo "note: cannot bind-mount here; running from the unpacked tree"
fi

# A clean environment: no build tree on PATH or the library path.
run() { env -i PATH=/usr/bin:/bin HOME="$T" FAKEAPP_SAY_CUPTI=1 "$@"; }
verdict() { # FILE PYTHON-CONDITION over s (section), k (records), L (launches), out (stdout)
	run "$B/bin/tally" check --json "$1" >"$1.json" 2>/dev/null
	python3 - "$1.json" "$2" "$3" <<'PY'
import json, re, sys
s = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
k, out = s["records"], open(sys.argv[2]).read()
L = sum(int(x) for x in re.findall(r"launched (\d+)", out))
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
}

run "$B/bin/tally" doctor --json -o "$T/out/x" >"$T/doctor.json" 2>/dev/null
python3 - "$T/doctor.json" "$B/lib/tally/libtally.so" <<'PY' && ok "doctor: collector found beside tally" || bad "doctor: collector"
import json, sys
d = json.load(open(sys.argv[1]))
f = {c["id"]: c for c in d["checks"]}["tool.collector"]
sys.exit(0 if f["status"] == "ok" and f["value"] == sys.argv[2] else 1)
PY

# 1. CUPTI given by TALLY_CUPTI_PATH
run TALLY_CUPTI_PATH="$T/app/libcupti.so.13" "$B/bin/tally" record -o "$T/out/env-%p" -- \
	"$T/app/fakeapp" exit $N >"$T/env.out" 2>"$T/env.err"
f=$(ls "$T"/out/env-*.tally 2>/dev/null | head -1)
if [ -n "$f" ] && verdict "$f" "$T/env.out" 's["verdict"] == "COMPLETE" and k["kernel"] == L == '$N; then
	ok "record from the bundle, TALLY_CUPTI_PATH: COMPLETE, $N kernels"
else
	bad "record from the bundle (TALLY_CUPTI_PATH)"
	cat "$T/env.err"
fi

# 2. The bundle carries CUPTI (as WITH_CUPTI=1 does; here the stand-in under CUPTI's name)
mkdir -p "$T/withcupti"
tar -C "$T/withcupti" --strip-components=1 -xzf "$tarball"
cp "$T/app/libcupti.so.13" "$T/withcupti/lib/tally/"
W=$T/withcupti
run "$W/bin/tally" doctor --json -o "$T/out/x" >"$T/doctor2.json" 2>/dev/null
python3 - "$T/doctor2.json" "$W/lib/tally/libcupti.so.13" <<'PY' && ok "doctor: says the bundled CUPTI is used" || { bad "doctor: bundled CUPTI"; grep -A3 '"tool.cupti"' "$T/doctor2.json"; }
import json, sys
f = {c["id"]: c for c in json.load(open(sys.argv[1]))["checks"]}["tool.cupti"]
sys.exit(0 if sys.argv[2] in f["value"] and "bundled" in f["value"] else 1)
PY
run "$W/bin/tally" record -o "$T/out/bundled-%p" -- "$T/app/fakeapp" exit $N >"$T/bundled.out" 2>"$T/bundled.err"
f=$(ls "$T"/out/bundled-*.tally 2>/dev/null | head -1)
grep -qx "cupti $W/lib/tally/libcupti.so.13" "$T/bundled.out" && ok "bundled CUPTI used when the program has none" ||
	{ bad "bundled CUPTI not used"; cat "$T/bundled.out" "$T/bundled.err"; }
[ -n "$f" ] && verdict "$f" "$T/bundled.out" 's["verdict"] == "COMPLETE" and k["kernel"] == L == '$N &&
	ok "bundled CUPTI: COMPLETE, $N kernels" || bad "bundled CUPTI: trace"

# 3. The program brings its own CUPTI: tally uses that one, not the bundle's
run FAKEAPP_OWN_CUPTI="$T/own/libcupti.so.13" "$W/bin/tally" record -o "$T/out/own-%p" -- \
	"$T/app/fakeapp" exit $N >"$T/own.out" 2>"$T/own.err"
f=$(ls "$T"/out/own-*.tally 2>/dev/null | head -1)
grep -qx "cupti $T/own/libcupti.so.13" "$T/own.out" && ok "the program's own CUPTI is used" ||
	{ bad "the program's own CUPTI was not used"; cat "$T/own.out" "$T/own.err"; }
[ -n "$f" ] && verdict "$f" "$T/own.out" 's["verdict"] == "COMPLETE" and k["kernel"] == L == '$N &&
	ok "own CUPTI: COMPLETE, $N kernels" || bad "own CUPTI: trace"

# 4. The program loads libcupti.so.13 by name only after tally did: the loader hands it the
# copy already loaded (same SONAME), so there is still one CUPTI in the process.
run LD_LIBRARY_PATH="$T/own" FAKEAPP_LATE_CUPTI=libcupti.so.13 "$W/bin/tally" record \
	-o "$T/out/late-%p" -- "$T/app/fakeapp" exit 100 >"$T/late.out" 2>"$T/late.err"
grep -qx "late cupti same" "$T/late.out" && ok "a CUPTI loaded by name later is the same copy" ||
	{ bad "a second CUPTI copy"; cat "$T/late.out" "$T/late.err"; }

# 5. The recipes of examples/, as written, with the bundle read-only at /opt/tally: in a private
# mount namespace (a tmpfs over /opt), so nothing on this machine changes.
if unshare -m true 2>/dev/null; then
	at_opt() { unshare -m "$SRC/tests/dist/at-opt-tally.sh" "$B" env -i PATH=/usr/bin:/bin HOME="$T" "$@"; }
	at_opt /opt/tally/bin/tally env --format docker --prefix /opt/tally -o /work/traces/ >"$T/env.docker"
	at_opt /opt/tally/bin/tally env --format k8s -o /traces/%h-%p >"$T/env.k8s"
	# docker run ... -v /opt/tally:/opt/tally:ro IMAGE /opt/tally/bin/tally record -o ... -- PROGRAM
	mkdir -p "$T/work/traces"
	at_opt TALLY_CUPTI_PATH="$T/app/libcupti.so.13" /opt/tally/bin/tally record \
		-o "$T/work/traces/run-%p" -- "$T/app/fakeapp" exit $N >"$T/docker.out" 2>"$T/docker.err"
	# an image or a pod with only tally's environment (Dockerfile ENV lines, a pod spec's env:)
	at_opt /opt/tally/bin/tally env -o "$T/work/traces/env-%p" >"$T/env.sh"
	at_opt sh -c '. "$1"; TALLY_CUPTI_PATH="$2" exec "$3" exit "$4"' sh "$T/env.sh" \
		"$T/app/libcupti.so.13" "$T/app/fakeapp" $N >"$T/envonly.out" 2>"$T/envonly.err"
	grep '^ENV ' "$SRC/examples/docker/README.md" | diff - "$T/env.docker" >/dev/null &&
		ok "examples/docker: the ENV lines are what tally env --format docker prints" ||
		bad "examples/docker: ENV lines differ from tally env --format docker"
	python3 - "$SRC/examples/kubernetes/pod.yaml" "$T/env.k8s" <<'PY' && ok "examples/kubernetes: the pod's env is what tally env --format k8s prints" || bad "examples/kubernetes: env differs from tally env --format k8s"
import re, sys
pairs = lambda t: re.findall(r'- name: (\S+)\s+value: "([^"]*)"', t)
pod, env = pairs(open(sys.argv[1]).read()), pairs(open(sys.argv[2]).read())
sys.exit(0 if pod == env and len(env) == 4 else 1)
PY
	f=$(ls "$T"/work/traces/run-*.tally 2>/dev/null | head -1)
	[ -n "$f" ] && verdict "$f" "$T/docker.out" 's["verdict"] == "COMPLETE" and k["kernel"] == L == '$N &&
		ok "examples/docker: the container's command, bundle at /opt/tally read-only: COMPLETE" ||
		{ bad "examples/docker: the recipe's command"; cat "$T/docker.err"; }
	f=$(ls "$T"/work/traces/env-*.tally 2>/dev/null | head -1)
	[ -n "$f" ] && verdict "$f" "$T/envonly.out" 's["verdict"] == "COMPLETE" and k["kernel"] == L == '$N &&
		ok "tally env only (Dockerfile ENV, pod env): the program is recorded, COMPLETE" ||
		{ bad "tally env only: no complete trace"; cat "$T/envonly.err"; }
else
	echo "note: no mount namespace here: the recipes at /opt/tally not run"
fi

# 6. make dist WITH_CUPTI=1 with the toolkit's own CUPTI: it and its licence are in the bundle,
# and the doctor says it is the one tally will use.
if ls "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcupti.so.* >/dev/null 2>&1; then
	withc=$("$SRC/scripts/dist.sh" "$BUILD" "$T/dist" --with-cupti) || bad "dist.sh --with-cupti"
	top2=$(tar -tzf "$withc" | head -1)
	[ "${top2%%/*}" = "$(basename "$withc" .tar.gz)" ] && [ "${top2%%/*}" != "${top%%/*}" ] &&
		ok "the WITH_CUPTI bundle unpacks to ${top2%%/*}/, beside the plain one" ||
		bad "the WITH_CUPTI bundle unpacks to $top2 (the plain one: $top)"
	mkdir -p "$T/real"
	tar -C "$T/real" --strip-components=1 -xzf "$withc"
	for f in lib/tally/libcupti.so.13 share/doc/tally/cupti/LICENSE.txt; do
		[ -f "$T/real/$f" ] && ok "WITH_CUPTI bundle has $f" || bad "WITH_CUPTI bundle lacks $f"
	done
	grep -q "CUDA Profiling Tools Interface" "$T/real/share/doc/tally/cupti/LICENSE.txt" &&
		ok "the licence names CUPTI as redistributable" || bad "the licence text does not list CUPTI"
	run "$T/real/bin/tally" doctor --json -o "$T/out/x" >"$T/doctor3.json" 2>/dev/null
	python3 - "$T/doctor3.json" "$T/real/lib/tally/libcupti.so.13" <<'PY' && ok "doctor: the toolkit's CUPTI, bundled, is the one used" || { bad "doctor: bundled real CUPTI"; grep -A3 '"tool.cupti"' "$T/doctor3.json"; }
import json, sys
f = {c["id"]: c for c in json.load(open(sys.argv[1]))["checks"]}["tool.cupti"]
sys.exit(0 if sys.argv[2] in f["value"] and "bundled" in f["value"] else 1)
PY
else
	echo "note: no toolkit CUPTI here: WITH_CUPTI=1 not tested"
fi
finish
