#!/usr/bin/env python3
"""Mounts a FUSE filesystem whose server never answers, and waits to be killed.

usage: hung_fuse.py MOUNTPOINT USER_ID

Every access to the mount (a stat, an open, a directory listing) then blocks
in the kernel until this process exits: what a user's FUSE mount with a
server that stopped answering, or a dead network filesystem, does to a
reader. USER_ID is recorded as the mount's owner (0: root's own mount).
allow_other lets root's reads reach the server, as with a user's mount made
under `user_allow_other`. Needs root for mount(2); prints "mounted" once the
mount is in place.
"""
import ctypes
import os
import signal
import sys


def main():
    mountpoint, user_id = sys.argv[1], int(sys.argv[2])
    device = os.open("/dev/fuse", os.O_RDWR)
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"fd={device},rootmode=40000,user_id={user_id},group_id=0,allow_other"
    if libc.mount(b"hung", mountpoint.encode(), b"fuse.hung", 0, options.encode()) != 0:
        error = ctypes.get_errno()
        print(f"mount failed: {os.strerror(error)}", flush=True)
        return 3
    print("mounted", flush=True)
    # Never reading /dev/fuse leaves the connection uninitialised: every
    # request waits for an answer that never comes.
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
