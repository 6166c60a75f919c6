#!/usr/bin/env python3
"""interrupt.py SIGNAL STATUS COMMAND...: runs COMMAND, sends it SIGNAL
(INT or TERM) once it has run for a while, and checks that it exits with
STATUS within 60 s. Its stderr passes through."""
import signal
import subprocess
import sys
import time

sig = getattr(signal, "SIG" + sys.argv[1])
want = int(sys.argv[2])
proc = subprocess.Popen(sys.argv[3:])
time.sleep(1.0)
if proc.poll() is not None:
    sys.exit("interrupt.py: the command ended before the signal (status %d)"
             % proc.returncode)
proc.send_signal(sig)
try:
    status = proc.wait(timeout=60)
except subprocess.TimeoutExpired:
    proc.kill()
    sys.exit("interrupt.py: no exit within 60 s of SIG" + sys.argv[1])
if status != want:
    sys.exit("interrupt.py: exit status %d, expected %d" % (status, want))
