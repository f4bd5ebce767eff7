#!/usr/bin/env python3
"""Mounts a FUSE filesystem whose server never answers, and waits to be killed.

usage: hung_fuse.py MOUNTPOINT USER_ID [--take-requests]

Every access to the mount (a stat, an open, a directory listing) then blocks
in the kernel until this process exits: what a user's FUSE mount with a
server that stopped answering, or a dead network filesystem, does to a
reader. USER_ID is recorded as the mount's owner (0: root's own mount).
allow_other lets root's reads reach the server, as with a user's mount made
under `user_allow_other`. Needs root for mount(2); prints "mounted" once the
mount is in place.

By default the connection is never initialised, so a blocked reader still
dies of SIGKILL. With --take-requests the server answers FUSE_INIT and then
reads every request without answering: a process waiting on a request the
server has taken sleeps where even SIGKILL does not reach it.
"""
import ctypes
import os
import signal
import struct
import sys

FUSE_INIT = 26
IN_HEADER = struct.Struct("<IIQQIIIHH")  # len, opcode, unique, nodeid, uid, gid, pid, extlen, pad
OUT_HEADER = struct.Struct("<IiQ")  # len, error, unique
INIT_OUT = struct.Struct("<IIIIHHIIHHI7I")  # fuse_init_out, protocol 7.31


def take_requests(device):
    while True:
        request = os.read(device, 1 << 20)
        _, opcode, unique, *_ = IN_HEADER.unpack_from(request)
        if opcode != FUSE_INIT:
            continue  # taken, never answered
        _major, _minor, readahead = struct.unpack_from("<III", request, IN_HEADER.size)
        body = INIT_OUT.pack(7, 31, readahead, 0, 16, 12, 4096, 1, 1, 0, 0, *([0] * 7))
        os.write(device, OUT_HEADER.pack(OUT_HEADER.size + len(body), 0, unique) + body)


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
    if "--take-requests" in sys.argv[3:]:
        take_requests(device)
    # Never reading /dev/fuse leaves the connection uninitialised: every
    # request waits for an answer that never comes.
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
