#!/bin/sh
# The Docker recipe (examples/docker/README.md) in a real container: Debian's podman (Docker's
# command line, no daemon) running a Debian 12 image imported from a pristine mmdebstrap root
# (tests/support/debian-root.sh), with the bundle (make dist) mounted read-only at /opt/tally, a
# host directory as the volume (-v DIR:/work) and the small-tmpfs landmine (--tmpfs
# /tmp:size=64m).  No GPU: the program is fakeapp with the stand-in CUPTI.
# The volume holds nothing but the program: the recipe's own `mkdir -p traces` makes the traces
# directory (run as written: a recipe that forgot it failed output.dir and recording).
#   - tally doctor inside sees the container (Podman), the volume, the overlay root and the tmpfs
#   - the recipe's command, `tally record -o /work/traces/ -- PROGRAM`, lands a COMPLETE trace
#     (tally-PID.tally) on the host with every kernel the program says it launched
#   - the recipe's other way: the image built with the ENV lines `tally env --format docker
#     --prefix /opt/tally` prints, the program started with no tally on its command line: the same
#   - `-o` inside the container's own filesystem is refused before the program runs
#   - examples/docker/Dockerfile, built beside the bundle on the test image as BASE: the container
#     run with only the program on its command line lands a COMPLETE trace in DIR/traces/
# The image lives in podman storage under $TALLY_FRESH_CACHE/podman (default
# /var/cache/tally-test/podman, its run state under /run/tally-test/podman), imported once.  This sandbox refuses crun's cgroup and rlimit
# set-up, so podman runs with runc, cgroupfs and no default ulimits (a containers.conf of its own,
# CONTAINERS_CONF: nothing under /etc changes), and without a network (none is needed).  Skips (77), saying why, where podman cannot run
# a container (not root, no podman or runc, no Debian root, a runtime that refuses).
# Usage: test-container.sh BUILD SRC FAKEAPP FAKECUPTI13
set -u
. "$(dirname "$0")/../lib.sh"
BUILD=$1 SRC=$2
CACHE=${TALLY_FRESH_CACHE:-/var/cache/tally-test}
N=2000
[ "$(id -u)" = 0 ] || skip "podman's storage and runc here need root"
command -v podman >/dev/null && command -v runc >/dev/null ||
	skip "no podman or runc (scripts/install-deps.sh machines)"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"
printf '[containers]\ndefault_ulimits = []\n' >"$T/containers.conf"
export CONTAINERS_CONF=$T/containers.conf
pod() {
	podman --root "$CACHE/podman" --runroot /run/tally-test/podman --runtime runc \
		--cgroup-manager=cgroupfs --events-backend=file "$@"
}
IMG=localhost/tally-test-deb12:base
ENVIMG=localhost/tally-test-deb12:env-$$ # this run's own: another run may build and remove its own

# the image: a pristine Debian 12 root, imported once
root=$("$SRC/tests/support/debian-root.sh" minimal) || skip "no pristine Debian root (above)"
if ! pod image exists "$IMG" 2>/dev/null; then
	pod import -q "$root" "$IMG" >"$T/import.log" 2>&1 ||
		{ cat "$T/import.log"; skip "podman cannot import $root"; }
fi
pod run --rm --network none "$IMG" true >"$T/run.log" 2>&1 ||
	{ cat "$T/run.log"; skip "podman cannot run a container here (above)"; }

# the bundle, unpacked on the host and mounted read-only; the program and the stand-in CUPTI
tarball=$("$SRC/scripts/dist.sh" "$BUILD" "$T/dist") || { bad "dist.sh"; finish; }
mkdir -p "$T/opt-tally" "$T/work/app"
tar -C "$T/opt-tally" --strip-components=1 -xzf "$tarball"
cp "$3" "$T/work/app/fakeapp"
cp "$4" "$T/work/app/libcupti.so.13"
W=$T/work
# docker run --rm --gpus all -v $PWD:/work -w /work -v /opt/tally:/opt/tally:ro IMAGE ...
# (no --gpus here: no GPU; podman's is --device nvidia.com/gpu=all)
recipe() { # IMAGE CMD...: the recipe's run line, with the tmpfs landmine and the stand-in CUPTI
	img=$1
	shift
	pod run --rm --network none -v "$W:/work" -w /work -v "$T/opt-tally:/opt/tally:ro" --tmpfs /tmp:size=64m \
		-e TALLY_CUPTI_PATH=/work/app/libcupti.so.13 "$img" "$@"
}

# host-side: the trace is COMPLETE with every kernel the program said it launched
landed() { # NAME GLOB OUT
	f=$(ls $2 2>/dev/null | head -1)
	j=$T/landed-$(printf '%s' "$1" | tr -c 'A-Za-z0-9' _).json
	[ -n "$f" ] && "$BUILD/src/cli/tally" check --json "$f" >"$j" 2>/dev/null
	if [ -n "$f" ] && python3 - "$j" "$3" <<'PY'; then
import json, re, sys
s = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
L = sum(int(x) for x in re.findall(r"launched (\d+)", open(sys.argv[2]).read()))
sys.exit(0 if s["verdict"] == "COMPLETE" and s["records"]["kernel"] == L > 0 else 1)
PY
		ok "$1: $(basename "$f") on the host, COMPLETE, every kernel the program launched"
	else
		bad "$1: no COMPLETE trace on the host ($f)"
		tail -5 "$3"
	fi
}

# the recipe's first line, on the host in the directory mounted as /work: taken from the README's
# block of way 1, so that a recipe that forgets it fails here as it fails its reader
mk=$(sed -n '/^## 1\./,/^## 2\./p' "$SRC/examples/docker/README.md" | grep -m1 '^mkdir -p traces$')
[ -n "$mk" ] && ok "the recipe makes its traces directory before the run: $mk" || bad "the recipe never makes its traces directory"
(cd "$W" && sh -c "$mk")

# 1. the doctor inside, output on the volume
recipe "$IMG" /opt/tally/bin/tally doctor --json -o /work/traces/ >"$T/doctor.json" 2>"$T/doctor.err"
echo $? >"$T/doctor.rc"
python3 - "$T/doctor.json" "$(cat "$T/doctor.rc")" <<'PY' && ok "doctor inside: Podman, the output on a mounted volume, /tmp a 64 MiB tmpfs (WARN), exit as can_record says" || { bad "doctor inside the container"; head -c 1500 "$T/doctor.json"; cat "$T/doctor.err"; }
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["id"]: x for x in d["checks"]}
ok = (c["where.container"]["status"] == "ok" and "podman" in c["where.container"]["value"].lower()
      and c["output.volume"]["status"] == "ok" and "mounted volume" in c["output.volume"]["value"]
      and c["output.tmpdir"]["status"] == "warn" and "tmpfs" in c["output.tmpdir"]["value"]
      and "64" in c["output.tmpdir"]["value"]
      and c["tool.collector"]["status"] == "ok" and c["tool.collector"]["value"] == "/opt/tally/lib/tally/libtally.so"
      and (sys.argv[2] == "0") == d["can_record"])
for k in ("where.container", "output.volume", "output.tmpdir"):
    print("    %s: %s: %s" % (k, c[k]["status"], c[k]["value"]))
sys.exit(0 if ok else 1)
PY

# 2. the doctor inside, output in the container's own filesystem: the overlay root, refused
recipe "$IMG" /opt/tally/bin/tally doctor --json -o /root/run-%p >"$T/doctor2.json" 2>/dev/null
rc=$?
python3 - "$T/doctor2.json" "$rc" <<'PY' && ok "doctor inside, -o /root: the container's overlay root, FAIL (exit 1)" || { bad "doctor: -o inside the container"; head -c 1500 "$T/doctor2.json"; }
import json, sys
d = json.load(open(sys.argv[1]))
v = {x["id"]: x for x in d["checks"]}["output.volume"]
print("    output.volume: %s: %s" % (v["status"], v["value"]))
sys.exit(0 if v["status"] == "fail" and "overlay" in v["value"] and sys.argv[2] == "1"
         and d["blocking"] == ["output.volume"] else 1)
PY

# 3. the recipe's command: tally record from the read-only bundle, the trace on the volume
recipe "$IMG" /opt/tally/bin/tally record -o /work/traces/ -- /work/app/fakeapp exit $N \
	>"$T/record.out" 2>"$T/record.err" || { bad "tally record in the container (exit $?)"; cat "$T/record.err"; }
landed "tally record -o DIR (/work/traces) in the container" "$W/traces/tally-*.tally" "$T/record.out"
mkdir -p "$W/done" && mv "$W"/traces/tally-*.tally "$W/done/" 2>/dev/null

# 4. the image with tally's environment baked in (tally env --format docker), no tally on the
# program's command line
recipe "$IMG" /opt/tally/bin/tally env --format docker --prefix /opt/tally -o /work/traces/env-%p >"$T/env.docker" ||
	bad "tally env --format docker in the container"
mkdir -p "$T/ctx"
{
	echo "FROM $IMG"
	cat "$T/env.docker"
} >"$T/ctx/Containerfile"
grep -q '^ENV CUDA_INJECTION64_PATH="/opt/tally/lib/tally/libtally.so"$' "$T/ctx/Containerfile" &&
	ok "tally env --format docker: ENV lines naming the mounted bundle" || bad "tally env --format docker: $(cat "$T/env.docker")"
pod build -q --network none -t "$ENVIMG" "$T/ctx" >"$T/build.log" 2>&1 || { bad "podman build"; cat "$T/build.log"; }
recipe "$ENVIMG" /work/app/fakeapp exit $N >"$T/env.out" 2>"$T/env.err" ||
	{ bad "the program in the image with tally's ENV (exit $?)"; cat "$T/env.err"; }
landed "image with tally env's ENV lines" "$W/traces/env-*.tally" "$T/env.out"
pod rmi -f "$ENVIMG" >/dev/null 2>&1

# 5. -o inside the container's own filesystem (a directory that is there): refused, the program
# not started
recipe "$IMG" /opt/tally/bin/tally record -o /root/run-%p -- /work/app/fakeapp exit 10 \
	>"$T/refused.out" 2>"$T/refused.err"
rc=$?
[ $rc -eq 1 ] && grep -q "output.volume: .*container's own root filesystem (overlay" "$T/refused.err" &&
	! grep -q "output.dir" "$T/refused.err" && grep -q "not recording" "$T/refused.err" &&
	! grep -q launched "$T/refused.out" &&
	ok "tally record -o /root (the container's own filesystem): refused, exit 1, the program not run" ||
	{ bad "tally record -o inside the container: exit $rc"; cat "$T/refused.err"; }
sed 's/^/    /' "$T/refused.err" | head -4

# 6. examples/docker/Dockerfile, as its header says: built beside the bundle, BASE the image the
# program runs in; the container run with the program alone on its command line
DFIMG=localhost/tally-test-deb12:dockerfile-$$
mkdir -p "$T/bundle-ctx"
cp "$tarball" "$T/bundle-ctx/"
if pod build -q --network none -f "$SRC/examples/docker/Dockerfile" --build-arg BASE="$IMG" \
	-t "$DFIMG" "$T/bundle-ctx" >"$T/dfbuild.log" 2>&1; then
	ok "examples/docker/Dockerfile builds on the test image"
	W2=$T/work2
	mkdir -p "$W2/app"
	cp "$W/app/fakeapp" "$W/app/libcupti.so.13" "$W2/app/"
	pod run --rm --network none -v "$W2:/work" --tmpfs /tmp:size=64m \
		-e TALLY_CUPTI_PATH=/work/app/libcupti.so.13 "$DFIMG" /work/app/fakeapp exit $N \
		>"$T/df.out" 2>"$T/df.err" || { bad "the Dockerfile's image running the program (exit $?)"; cat "$T/df.err"; }
	landed "the Dockerfile's image: the program alone on the command line" "$W2/traces/tally-*.tally" "$T/df.out"
	pod rmi -f "$DFIMG" >/dev/null 2>&1
else
	bad "examples/docker/Dockerfile does not build"
	tail -n 20 "$T/dfbuild.log"
fi
finish
