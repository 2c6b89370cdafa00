"""One command run as a child with its output to /dev/null, measured as the import benches
measure it: wall seconds, CPU seconds (user + sys, its rusage read with wait4, to the
microsecond; GNU time prints it in 10 ms steps, 3 % of a 340 MB JTL read) and peak RSS in MB.
A command that fails stops the bench."""
import os, sys, time


def run(argv, env):
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.execve(argv[0], argv, env)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(argv)} exited {os.waitstatus_to_exitcode(status)}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024
