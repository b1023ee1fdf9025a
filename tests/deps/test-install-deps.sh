#!/bin/sh
# scripts/install-deps.sh against stand-in dpkg-query, apt-get, id and python3 (first on PATH),
# in the states a machine is found in: nothing installed, python3 only (a cloud image), python3
# from elsewhere (pyenv: an interpreter dpkg does not know), everything installed, a package apt
# cannot find, not root, another apt holding the dpkg lock (a while, and past the bound).  What must be installed follows from what the script asked dpkg about:
# every name it asked about and dpkg did not have, each once, and nothing else.
# Usage: test-install-deps.sh SRC
set -u
. "$(dirname "$0")/../lib.sh"
SRC=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

mkdir -p "$T/bin" "$T/cuda/include"
: >"$T/cuda/include/cupti_activity.h"
# dpkg-query -W -f=FMT NAME: installed when NAME is in $FAKE_INSTALLED ("all": everything)
cat >"$T/bin/dpkg-query" <<'SH'
#!/bin/sh
for last; do :; done
echo "$last" >>"$FAKE_LOG/queried"
case " $FAKE_INSTALLED " in
*" all "* | *" $last "*) printf 'install ok installed' ;;
*) echo "dpkg-query: no packages found matching $last" >&2; exit 1 ;;
esac
SH
# apt-get update | install [-s] [opts] NAMES: names in $FAKE_UNKNOWN cannot be found
# (FAKE_LOCKED=N: the first N calls that take the lock fail as when unattended-upgrades holds it;
# "forever": every one)
cat >"$T/bin/apt-get" <<'SH'
#!/bin/sh
echo "apt-get $*" >>"$FAKE_LOG/apt"
case " $* " in *" -s "*) ;; *)
	if [ -n "${FAKE_LOCKED:-}" ]; then
		n=$(cat "$FAKE_LOG/locks" 2>/dev/null || echo 0)
		if [ "$FAKE_LOCKED" = forever ] || [ "$n" -lt "$FAKE_LOCKED" ]; then
			echo $((n + 1)) >"$FAKE_LOG/locks"
			echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4321 (unattended-upgr)" >&2
			echo "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?" >&2
			exit 100
		fi
	fi ;;
esac
[ "$1" = install ] || exit 0
sim=""
names=""
for a; do
	case $a in install | -y | -qq | --no-install-recommends) ;; -s) sim=1 ;; *) names="$names $a" ;; esac
done
for n in $names; do
	case " $FAKE_UNKNOWN " in *" $n "*) echo "E: Unable to locate package $n" >&2; exit 100 ;; esac
done
[ -n "$sim" ] || for n in $names; do echo "$n" >>"$FAKE_LOG/installed"; done
SH
cat >"$T/bin/id" <<'SH'
#!/bin/sh
echo "${FAKE_UID:-0}"
SH
# python3 on PATH works only where the state says so
cat >"$T/bin/python3" <<'SH'
#!/bin/sh
[ -n "${FAKE_PYTHON:-}" ] || exit 127
exec /usr/bin/python3 "$@"
SH
chmod +x "$T/bin/"*

# deps NAME INSTALLED [VAR=VALUE...] -- GROUP...: runs the script in a state; its output in
# $T/NAME.out, what it asked dpkg about and installed in $T/NAME/{queried,installed}
deps() {
	name=$1 inst=$2
	shift 2
	mkdir -p "$T/$name"
	: >"$T/$name/queried"
	: >"$T/$name/installed"
	env PATH="$T/bin:/usr/bin:/bin" CUDA_HOME="$T/cuda" FAKE_LOG="$T/$name" FAKE_INSTALLED="$inst" \
		"$@" "$SRC/scripts/install-deps.sh" $groups >"$T/$name.out" 2>&1
}
# 1. nothing installed, no python3 at all: every group's every name, once
groups="build test browser"
deps none "" FAKE_UNKNOWN=""
rc=$?
[ $rc -eq 0 ] && [ -s "$T/none/installed" ] &&
	[ "$(sort "$T/none/installed")" = "$(sort -u "$T/none/queried")" ] &&
	[ "$(sort "$T/none/installed" | uniq -d)" = "" ] &&
	grep -qx python3 "$T/none/installed" && grep -qx python3-pil "$T/none/installed" &&
	grep -qx gcc "$T/none/installed" && grep -qx clang-format "$T/none/installed" &&
	ok "nothing installed: all $(wc -l <"$T/none/installed") names asked about are installed, python3 and python3-pil among them" ||
	{ bad "nothing installed (rc $rc)"; cat "$T/none.out"; }
grep -q "^apt-get update" "$T/none/apt" && ok "nothing installed: apt-get update first" || bad "no apt-get update"

# 2. python3 only, as cloud images have it: python3-pil is still installed, python3 is not
deps py3 "python3" FAKE_PYTHON=1 FAKE_UNKNOWN=""
rc=$?
[ $rc -eq 0 ] && ! grep -qx python3 "$T/py3/installed" && grep -qx python3-pil "$T/py3/installed" &&
	[ "$(sort "$T/py3/installed")" = "$(sort -u "$T/py3/queried" | grep -vx python3)" ] &&
	ok "python3 only: python3-pil and the rest installed, python3 not" ||
	{ bad "python3 only (rc $rc)"; cat "$T/py3.out" "$T/py3/installed"; }

# 3. python3 from elsewhere (dpkg does not know it, the interpreter works)
deps pyenv "" FAKE_PYTHON=1 FAKE_UNKNOWN=""
! grep -qx python3 "$T/pyenv/installed" && grep -qx python3-pil "$T/pyenv/installed" &&
	ok "python3 from elsewhere: not installed again" || bad "python3 from elsewhere"

# 4. everything installed: apt is not run
deps all "all" FAKE_UNKNOWN=""
rc=$?
[ $rc -eq 0 ] && [ ! -s "$T/all/installed" ] && [ ! -e "$T/all/apt" ] && [ ! -s "$T/all.out" ] &&
	ok "everything installed: apt not run, nothing printed" || { bad "everything installed (rc $rc)"; cat "$T/all.out"; }

# 5. a name apt cannot find: named alone, exit 1
deps unknown "python3" FAKE_PYTHON=1 FAKE_UNKNOWN="chromium"
rc=$?
[ $rc -eq 1 ] && grep -q "apt cannot find: chromium (" "$T/unknown.out" &&
	! grep "apt cannot find" "$T/unknown.out" | grep -q "python3-pil\|nodejs" &&
	ok "a name apt cannot find is named: $(grep 'cannot find' "$T/unknown.out" | cut -c1-60)..." ||
	{ bad "unknown package (rc $rc)"; cat "$T/unknown.out"; }

# 6. not root: says what is missing and how to install it, installs nothing
deps user "python3" FAKE_PYTHON=1 FAKE_UID=1000 FAKE_UNKNOWN=""
rc=$?
[ $rc -eq 1 ] && [ ! -e "$T/user/apt" ] && grep -q "run as root: apt-get install .* python3-pil" "$T/user.out" &&
	! grep "missing:" "$T/user.out" | grep -qE " python3( |$)" &&
	ok "not root: the missing names and the command, nothing run" || { bad "not root (rc $rc)"; cat "$T/user.out"; }

# 7. groups: build alone asks for no test or browser package; a wrong group is refused
groups="build"
deps build "" FAKE_UNKNOWN=""
! grep -qx "chromium\|python3\|libcmocka-dev\|slurm-wlm" "$T/build/queried" && grep -qx cmake "$T/build/installed" &&
	ok "build group: the compiler and libraries only ($(tr '\n' ' ' <"$T/build/installed"))" ||
	{ bad "build group"; cat "$T/build/queried"; }
# 8. another apt holds the dpkg lock (unattended-upgrades on a fresh VM): waited for, saying so,
# then everything installed; held longer than the bound: it gives up, naming the lock (exit 1)
deps locked "" FAKE_UNKNOWN="" FAKE_LOCKED=3 TALLY_APT_LOCK_POLL=1 TALLY_APT_LOCK_WAIT=20
rc=$?
[ $rc -eq 0 ] && grep -q "holds the package lock (held by process 4321 (unattended-upgr)): waiting for it, up to 20 s" "$T/locked.out" &&
	grep -qx cmake "$T/locked/installed" && [ "$(cat "$T/locked/locks")" = 3 ] &&
	ok "the dpkg lock held for 3 tries: waited, said so, installed" || { bad "lock held a while (rc $rc)"; cat "$T/locked.out"; }
deps stuck "" FAKE_UNKNOWN="" FAKE_LOCKED=forever TALLY_APT_LOCK_POLL=1 TALLY_APT_LOCK_WAIT=3
rc=$?
[ $rc -eq 1 ] && grep -q "gave up after 3 s: Could not get lock /var/lib/dpkg/lock-frontend" "$T/stuck.out" &&
	[ ! -s "$T/stuck/installed" ] && [ "$(cat "$T/stuck/locks")" -le 5 ] &&
	ok "the dpkg lock never freed: gives up after the bound, naming the lock (exit 1)" || { bad "lock never freed (rc $rc)"; cat "$T/stuck.out"; }

groups="nonsense"
deps nonsense "" FAKE_UNKNOWN=""
[ $? -eq 2 ] && grep -q "no group 'nonsense'" "$T/nonsense.out" && ok "an unknown group is refused (exit 2)" ||
	bad "unknown group"
finish
