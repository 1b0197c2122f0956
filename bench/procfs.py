"""Memory and CPU of processes and of the machine, read from /proc (procps may not be installed)."""
import contextlib
import glob
import os
import resource
import threading
import time
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")
CPUS = len(os.sched_getaffinity(0))  # as `nproc` counts them


def stat_fields(pid):
    """The fields of /proc/PID/stat from the third (state) on, or None once it has ended. Counted from
    there, the parent's id is 1; utime and stime are 11 and 12; cutime and cstime 13 and 14."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(") ")[2].split()
    except OSError:
        return None


def rss_kb(pid):
    """Resident memory now, in kB; None once the process has ended (a zombie has no VmRSS)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def command_name(pid):
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def children_of(pid):
    """The ids of PID's live child processes."""
    children = []
    for path in glob.glob("/proc/[0-9]*"):
        fields = stat_fields(Path(path).name)  # (it may have ended meanwhile)
        if fields and fields[1] == str(pid):
            children.append(int(Path(path).name))
    return children


def process_ticks(pid):
    """CPU clock ticks used so far by PID, its reaped children and its live children (the postmaster's
    children are the backends; nginx's are its workers)."""
    total = 0
    for each in [pid, *children_of(pid)]:
        fields = stat_fields(each)
        if fields:
            total += sum(int(value) for value in fields[11:15])
    return total


def machine_ticks():
    """(busy, total, interrupts, steal) clock ticks of all cores since boot. Idle and iowait count as not
    busy. Interrupt work (irq, softirq: much of loopback TCP) is busy but charged to no process; steal is
    time the hypervisor gave to other guests."""
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, stat.readline().split()[1:9])
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait, irq + softirq, steal


def ended_children_cpu_seconds():
    """CPU time (user + system) of the children this program has waited for: a client run to its end
    (wrk, pgbench, psql, replay) counts once it has finished."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextlib.contextmanager
def cpu_used(postmaster_pid, watched=()):
    """Who used the cores during the block: yields a dict that then holds, in cores as text (1.00 = one
    core busy all along), how busy the machine was (`machine`), its `interrupts` and `steal`, PostgreSQL
    (`postgres`), the clients that ended meanwhile (`client`), and each watched (name, pid) by its name.
    What is left is other processes on the machine."""
    machine = machine_ticks()
    postgres = process_ticks(postmaster_pid)
    procs = [process_ticks(pid) for _, pid in watched]
    clients = ended_children_cpu_seconds()
    figures = {}
    yield figures
    client_seconds = ended_children_cpu_seconds() - clients
    busy, total, interrupts, steal = (now - then for now, then in zip(machine_ticks(), machine))
    # /proc/stat counts ticks of every core: elapsed seconds = total ticks / cores / hz.
    seconds = total / CPUS / HZ

    def cores(ticks):
        return f"{ticks / HZ / seconds:.2f}"

    figures.update(machine=cores(busy), interrupts=cores(interrupts), steal=cores(steal),
                   postgres=cores(process_ticks(postmaster_pid) - postgres), client=f"{client_seconds / seconds:.2f}")
    for (name, pid), before in zip(watched, procs):
        figures[name] = cores(process_ticks(pid) - before)


class Sampler:
    """Samples a process five times a second, on a thread of its own, until it ends or SECONDS pass: its
    highest VmRSS, and the CPU ticks it had used at the last sample."""

    def __init__(self, pid, seconds):
        self.peak_kb = 0
        self.ticks = 0
        self._thread = threading.Thread(target=self._sample, args=(pid, time.monotonic() + seconds), daemon=True)
        self._thread.start()

    def _sample(self, pid, deadline):
        while time.monotonic() < deadline:
            now, fields = rss_kb(pid), stat_fields(pid)
            if now is None or fields is None:
                break
            self.ticks = int(fields[11]) + int(fields[12])
            self.peak_kb = max(self.peak_kb, now)
            time.sleep(0.2)

    def result(self):
        self._thread.join()
        return self

