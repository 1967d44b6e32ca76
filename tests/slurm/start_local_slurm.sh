#!/usr/bin/env bash
# Start a real single-node SLURM cluster on this (Debian) machine, for the SLURM
# integration test. Needs root. Idempotent: a running cluster is left as it is.
# No cgroups or accounting here, so: proctrack/linuxproc, task/none, accounting none;
# two fake GPUs (distinct /dev/null symlinks) so that gpu/gres requests can be scheduled.
set -euo pipefail

if sinfo -h -o %T 2>/dev/null | grep -qE "idle|mix|alloc"; then
  echo "SLURM already running"; exit 0
fi
if ! command -v slurmctld >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends munge slurmctld slurmd slurm-client >/dev/null \
    || { apt-get update >/dev/null && apt-get install -y --no-install-recommends munge slurmctld slurmd slurm-client >/dev/null; }
fi

host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))

install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
pgrep -x munged >/dev/null || su -s /bin/sh munge -c "/usr/sbin/munged"

mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /dev/fakegpu
ln -sf /dev/null /dev/fakegpu/0
ln -sf /dev/null /dev/fakegpu/1
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=vlcomp-test
SlurmctldHost=${host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
ReturnToService=2
MpiDefault=none
GresTypes=gpu
NodeName=${host} CPUs=${cpus} RealMemory=${mem_mb} Gres=gpu:2 State=UNKNOWN
PartitionName=main Nodes=${host} Default=YES MaxTime=INFINITE State=UP
CONF
cat > /etc/slurm/gres.conf <<CONF
NodeName=${host} Name=gpu File=/dev/fakegpu/0
NodeName=${host} Name=gpu File=/dev/fakegpu/1
CONF

pgrep -x slurmctld >/dev/null || slurmctld -i
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 60); do
  if sinfo -h -o %T 2>/dev/null | grep -qE "^idle"; then echo "SLURM up on ${host}"; exit 0; fi
  scontrol update nodename="${host}" state=resume >/dev/null 2>&1 || true
  sleep 1
done
echo "SLURM did not become idle; logs:" >&2
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2
exit 1
