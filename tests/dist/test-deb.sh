#!/bin/sh
# The Debian package (make deb): built by CPack from BUILD, installed with apt-get, run from the
# installed paths (tally on PATH, the collector under /usr/lib/tally/), then purged, so the
# machine is left as it was.  Skips (77) when not root, without apt, or when a tally package is
# already installed (it is not ours to replace).
# Usage: test-deb.sh BUILD FAKEAPP FAKECUPTI13
set -u
. "$(dirname "$0")/../lib.sh"
BUILD=$1
[ "$(id -u)" = 0 ] || skip "installing a package needs root"
command -v apt-get >/dev/null && command -v cpack >/dev/null || skip "no apt-get or cpack"
if dpkg-query -W -f='${Status}' tally 2>/dev/null | grep -q "install ok"; then
	skip "a tally package is already installed here"
fi
T=$(mktemp -d)
installed=""
# Other engineers' apt runs may hold the dpkg lock for a while: wait for it, do not fail.
apt() { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -y -qq "$@"; }
trap '[ -z "$installed" ] || apt purge tally >/dev/null 2>&1; rm -rf "$T"' EXIT
N=1500
mkdir -p "$T/app" "$T/out"
cp "$2" "$T/app/fakeapp"
cp "$3" "$T/app/libcupti.so.13"

cpack -G DEB -B "$T/deb" --config "$BUILD/CPackConfig.cmake" >"$T/cpack.log" 2>&1 ||
	{ cat "$T/cpack.log"; bad "cpack"; finish; }
deb=$(ls "$T"/deb/tally_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] && ok "built $(basename "$deb")" || { bad "no .deb"; finish; }
installed=1
apt install --no-install-recommends "$deb" >"$T/apt.log" 2>&1 ||
	{ cat "$T/apt.log"; bad "apt-get install"; finish; }
ok "apt-get install ./$(basename "$deb")"

run() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$T" "$@"; }
[ "$(run sh -c 'command -v tally')" = /usr/bin/tally ] && ok "tally on PATH at /usr/bin/tally" || bad "tally not on PATH"
[ -f /usr/lib/tally/libtally.so ] && ok "collector at /usr/lib/tally/libtally.so" || bad "no /usr/lib/tally/libtally.so"
[ -f /usr/share/doc/tally/docs/record.md ] && ok "docs under /usr/share/doc/tally" || bad "no docs"

cd "$T"
run tally doctor --json -o "$T/out/x" >"$T/doctor.json" 2>"$T/doctor.err"
python3 - "$T/doctor.json" <<'PY' && ok "tally doctor --json: collector /usr/lib/tally/libtally.so" || { bad "doctor"; cat "$T/doctor.json" "$T/doctor.err"; }
import json, sys
c = {x["id"]: x for x in json.load(open(sys.argv[1]))["checks"]}["tool.collector"]
sys.exit(0 if c["status"] == "ok" and c["value"] == "/usr/lib/tally/libtally.so" else 1)
PY

run TALLY_CUPTI_PATH="$T/app/libcupti.so.13" tally record -o "$T/out/deb-%p" -- "$T/app/fakeapp" exit $N \
	>"$T/rec.out" 2>"$T/rec.err"
f=$(ls "$T"/out/deb-*.tally 2>/dev/null | head -1)
if [ -n "$f" ] && run tally check --json "$f" >"$T/check.json" &&
	python3 - "$T/check.json" "$T/rec.out" "$N" <<'PY'; then
import json, re, sys
s = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
L = sum(int(x) for x in re.findall(r"launched (\d+)", open(sys.argv[2]).read()))
sys.exit(0 if s["verdict"] == "COMPLETE" and s["records"]["kernel"] == L == int(sys.argv[3]) else 1)
PY
	ok "recorded from the installed paths: COMPLETE, $N kernels"
else
	bad "record from the installed paths"
	cat "$T/rec.err"
fi
apt purge tally >/dev/null 2>&1 && installed="" && [ ! -e /usr/bin/tally ] && ok "purged" || bad "purge"
finish
