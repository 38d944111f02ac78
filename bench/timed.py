# SPDX-License-Identifier: MIT
"""timed.py OUT CMD...: runs CMD and writes "wall_s cpu_s" to OUT (wait4's rusage, to the
microsecond: /usr/bin/time rounds to 10 ms); exits as CMD. Used by bench/run-download.sh and
bench/run-upload.sh."""
import os, sys, time
out, argv = sys.argv[1], sys.argv[2:]
t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
with open(out, "w") as f:
    f.write("%.4f %.4f\n" % (wall, ru.ru_utime + ru.ru_stime))
sys.exit(os.waitstatus_to_exitcode(status) & 255)
