#!/bin/sh
# The Debian package (make deb): built by CPack from BUILD, installed with apt-get, run from the
# installed paths (tally on PATH, the collector under /usr/lib/tally/), then purged, so the
# machine is left as it was.  Before that, lintian (Debian's own checker) must find no error and
# no warning in it (its output is printed), and it must carry what Debian wants of a package:
# copyright in the machine-readable format, changelog.Debian.gz, a man page per command, the
# hardening flags, an executable examples/slurm/job.sh.  Skips (77) when not root, without apt,
# or when a tally package is already installed (it is not ours to replace).
# Usage: test-deb.sh BUILD FAKEAPP FAKECUPTI13 SRC
set -u
. "$(dirname "$0")/../lib.sh"
BUILD=$1 SRC=$4
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

if command -v lintian >/dev/null; then
	lintian -I --fail-on error,warning "$deb" >"$T/lintian.out" 2>&1
	rc=$?
	grep -v "^running with root privileges" "$T/lintian.out" | sed 's/^/    lintian: /'
	[ $rc -eq 0 ] && ok "lintian: no error, no warning" || bad "lintian (exit $rc)"
else
	bad "no lintian (scripts/install-deps.sh test installs it)"
fi
dpkg-deb -f "$deb" Maintainer Suggests Description >"$T/control"
dpkg-deb -c "$deb" >"$T/contents"
! grep -q "^Maintainer:.*@localhost" "$T/control" && grep -q "^Suggests: libdw1" "$T/control" &&
	[ "$(sed -n '/^Description:/,$p' "$T/control" | wc -l)" -gt 3 ] &&
	ok "control: Maintainer not @localhost, Suggests: libdw1, an extended description" ||
	{ bad "control fields"; cat "$T/control"; }
mkdir -p "$T/x"
dpkg-deb -x "$deb" "$T/x"
D=$T/x/usr/share/doc/tally
head -1 "$D/copyright" | grep -q "^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" &&
	grep -q "^License: Expat" "$D/copyright" && grep -qF "$(sed -n 5p "$SRC/LICENSE")" "$D/copyright" &&
	ok "copyright: machine-readable, tally's licence text in it" || bad "copyright"
zcat "$D/changelog.Debian.gz" 2>/dev/null | head -1 | grep -q "^tally ($(dpkg-deb -f "$deb" Version))" &&
	ok "changelog.Debian.gz names this version" || bad "changelog.Debian.gz"
[ -x "$D/examples/slurm/job.sh" ] && ok "examples/slurm/job.sh is executable" || bad "job.sh is not executable"
missing_man=""
for c in "" $("$T/x/usr/bin/tally" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p'); do
	[ -s "$T/x/usr/share/man/man1/tally${c:+-$c}.1.gz" ] || missing_man="$missing_man tally${c:+-$c}"
done
[ -z "$missing_man" ] && ok "a man page for tally and each command it lists" || bad "no man page:$missing_man"
readelf -d "$T/x/usr/bin/tally" | grep -q "FLAGS.*BIND_NOW" && readelf -d "$T/x/usr/lib/tally/libtally.so" |
	grep -q "FLAGS.*BIND_NOW" && nm -D "$T/x/usr/bin/tally" | grep -q "__snprintf_chk" &&
	ok "hardened: -z now, _FORTIFY_SOURCE (checked calls)" || bad "hardening flags"
installed=1
apt install --no-install-recommends "$deb" >"$T/apt.log" 2>&1 ||
	{ cat "$T/apt.log"; bad "apt-get install"; finish; }
ok "apt-get install ./$(basename "$deb")"

run() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$T" "$@"; }
[ "$(run sh -c 'command -v tally')" = /usr/bin/tally ] && ok "tally on PATH at /usr/bin/tally" || bad "tally not on PATH"
[ -f /usr/lib/tally/libtally.so ] && ok "collector at /usr/lib/tally/libtally.so" || bad "no /usr/lib/tally/libtally.so"
[ -f /usr/share/doc/tally/docs/record.md ] && ok "docs under /usr/share/doc/tally" || bad "no docs"
run tally --help | grep -qF "/usr/share/doc/tally/docs/ has a page" &&
	ok "tally --help points at /usr/share/doc/tally/docs" || bad "tally --help does not point at the installed docs"

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
