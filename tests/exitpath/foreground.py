"""foreground.py COMMAND [ARGS...]: exec COMMAND with SIGINT and SIGQUIT at their default actions,
as a terminal's foreground job has them.  A script's background job starts with both ignored
(POSIX), and tally record rightly keeps an ignored signal ignored for the program."""
import os
import signal
import sys

signal.signal(signal.SIGINT, signal.SIG_DFL)
signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execvp(sys.argv[1], sys.argv[1:])
