#!/bin/sh
# A real single-node Slurm for the tests, started by hand as root without systemd:
#   cluster.sh start DIR [linuxproc|cgroup]    (KILLWAIT=seconds, default 5)
#   cluster.sh stop DIR
# Everything lives in DIR: slurm.conf (clients find it through SLURM_CONF=DIR/slurm.conf, which
# `start` prints), munge's key and socket, spool and state directories, logs.  Its own ports and
# munge socket keep it apart from any other Slurm on the machine.  The node is what the machine
# is: its real CPU count (nproc), which slurmd checks against the hardware; the partition lets
# jobs share CPUs (OverSubscribe), as a test runs several small jobs at once, but a job that asks
# for more tasks than the node has CPUs is refused, as on any cluster.  Exits 77, saying why,
# where Slurm cannot start (not root, slurm-wlm or munge missing, the node never comes up).
set -eu
cmd=$1 dir=$2 track=${3:-linuxproc}
skip() { echo "skip: $*" >&2; exit 77; }

stop() {
	# jobs first: slurmstepd outlives slurmd, and a job left running would run on unattended
	if [ -f "$dir/slurmctld.pid" ]; then
		export SLURM_CONF=$dir/slurm.conf
		scancel --quiet --partition=debug 2>/dev/null || true
		i=0
		while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $i -lt 150 ]; do
			sleep 0.1
			i=$((i + 1))
		done
	fi
	for p in slurmd slurmctld munged; do
		[ -f "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null || true
	done
	for p in slurmd slurmctld munged; do
		i=0
		while [ -f "$dir/$p.pid" ] && kill -0 "$(cat "$dir/$p.pid")" 2>/dev/null && [ $i -lt 50 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		rm -f "$dir/$p.pid"
	done
}

free_port() { # two consecutive free TCP ports from a range unlikely to be taken
	p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
	while ss -ltn 2>/dev/null | grep -qE ":($p|$((p + 1))) "; do p=$((p + 2)); done
	echo "$p"
}

write_conf() {
	port=$(free_port)
	cat >"$dir/slurm.conf" <<CONF
ClusterName=tallytest
SlurmctldHost=localhost
SlurmctldAddr=127.0.0.1
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/$track
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=${KILLWAIT:-5}
InactiveLimit=0
MinJobAge=300
FirstJobId=$((port * 10))
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE OverSubscribe=FORCE:8 State=UP
CONF
	# cgroup v1 (what these machines have writable); only read by proctrack/cgroup
	echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
}

start_munge() {
	mkdir -p "$dir/munge"
	dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
	chown -R munge:munge "$dir/munge"
	# munged wants its socket's directory searchable by all, and nothing above it writable
	chmod 755 "$dir/munge"
	chmod 600 "$dir/munge/munge.key"
	chmod 755 "$dir"
	runuser -u munge -- munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
		--pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
		--seed-file="$dir/munge/munged.seed" ||
		skip "munged does not start (see $dir/munge/munged.log)"
	cp "$dir/munge/munged.pid" "$dir/munged.pid"
}

start() {
	[ "$(id -u)" = 0 ] || skip "starting Slurm's daemons needs root"
	for b in slurmctld slurmd munged srun sbatch; do
		command -v $b >/dev/null || skip "$b not installed (apt-get install slurm-wlm munge)"
	done
	mkdir -p "$dir/state" "$dir/spool"
	write_conf
	start_munge
	export SLURM_CONF=$dir/slurm.conf
	slurmctld -i -f "$SLURM_CONF" || { stop; skip "slurmctld does not start (see $dir/slurmctld.log)"; }
	slurmd -N localhost -f "$SLURM_CONF" || { stop; skip "slurmd does not start (see $dir/slurmd.log)"; }
	i=0
	until sinfo -h -N -o %t 2>/dev/null | grep -qx idle; do
		i=$((i + 1))
		[ $i -lt 300 ] || { stop; skip "the node did not come up in 30 s (see $dir/*.log)"; }
		sleep 0.1
	done
	echo "SLURM_CONF=$SLURM_CONF"
}

case $cmd in
start) start ;;
stop) stop ;;
*) echo "usage: cluster.sh start|stop DIR [linuxproc|cgroup]" >&2; exit 2 ;;
esac
