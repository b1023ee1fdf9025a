#!/bin/sh
# at-opt-tally.sh BUNDLE COMMAND...: runs COMMAND with BUNDLE mounted read-only at /opt/tally, as
# the recipes of examples/ mount it, in a private mount namespace (a tmpfs over /opt) so nothing
# on the machine changes.  Run it under `unshare -m`.
set -eu
bundle=$1
shift
mount -t tmpfs tally-test /opt
mkdir /opt/tally
mount --bind "$bundle" /opt/tally
mount -o remount,ro,bind /opt/tally
exec "$@"
