#!/bin/sh
# Installs what tally needs to build and test, from Debian's packages, when run as root; as
# another user it only says what is missing and the command that installs it.
# CUDA (nvcc, CUPTI headers and libcupti) is not a Debian package here: it must be present under
# /usr/local/cuda (or CUDA_HOME); this script checks for it and says so if it is not.
set -eu
need_pkgs="cmake pkg-config gcc make libiberty-dev libcmocka-dev libxxhash-dev libjansson-dev libsqlite3-dev sqlite3 python3 libdw-dev"
# tests/cli/test-hostile.sh: a full disk on small file systems (unshare, mount, script; mkfs.ext4)
need_pkgs="$need_pkgs util-linux bsdutils e2fsprogs"
# a real single-node Slurm for tests/slurm/ (started by hand, without systemd)
need_pkgs="$need_pkgs slurm-wlm munge"
# tally report: its page is checked by node (syntax) and in a headless browser (tests/cli/test-html-report.sh)
[ "${TALLY_NO_CHROMIUM:-}" ] || need_pkgs="$need_pkgs chromium python3-pil nodejs"
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
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cupti_activity.h" ]; then
	echo "install-deps: CUDA with CUPTI not found under $cuda (need include/cupti_activity.h and libcupti)." >&2
	echo "install-deps: install the CUDA toolkit (13.x) or set CUDA_HOME to where it is." >&2
	exit 1
fi
