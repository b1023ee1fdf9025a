#!/bin/sh
# A pristine Debian 12 root, as a tarball made once by Debian's mmdebstrap (--variant=apt:
# Essential packages and apt; no make, git or python3) and kept under $TALLY_FRESH_CACHE (default
# /var/cache/tally-test, outside any tree); made again when absent.  Prints the tarball's path.
#   debian-root.sh minimal      the bare root
#   debian-root.sh python3      the same with python3, as cloud images have it
# Tests that use it (tests/fresh, tests/container) unpack or import it afresh each run.  Exits 77,
# saying why, when it cannot be made here (not root, no mmdebstrap, no Debian mirror).
set -eu
variant=$1
CACHE=${TALLY_FRESH_CACHE:-/var/cache/tally-test}
case $variant in
minimal) extra="" ;;
python3) extra=--include=python3 ;;
*) echo "debian-root: no variant '$variant' (minimal, python3)" >&2; exit 2 ;;
esac
tar=$CACHE/bookworm-$variant.tar
[ -s "$tar" ] && { echo "$tar"; exit 0; }
[ "$(id -u)" = 0 ] || { echo "SKIP: making a Debian root needs root" >&2; exit 77; }
command -v mmdebstrap >/dev/null || { echo "SKIP: no mmdebstrap (scripts/install-deps.sh machines)" >&2; exit 77; }
mkdir -p "$CACHE"
# one maker at a time: a test run may make the roots while another waits for them
exec 9>"$CACHE/.lock"
flock 9
if [ ! -s "$tar" ]; then
	t0=$(date +%s)
	log=$(mktemp)
	# shellcheck disable=SC2086
	if ! mmdebstrap --quiet --variant=apt $extra bookworm "$tar.part.tar" >"$log" 2>&1; then
		tail -5 "$log" >&2
		rm -rf "$tar.part.tar" "$log"
		echo "SKIP: mmdebstrap could not make a Debian 12 root here (no mirror?)" >&2
		exit 77
	fi
	rm -f "$log"
	mv "$tar.part.tar" "$tar"
	echo "made $tar in $(($(date +%s) - t0)) s" >&2
fi
echo "$tar"
