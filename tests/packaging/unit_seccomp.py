#!/usr/bin/python3
"""Loads a seccomp filter like the one systemd builds for a unit, then execs a command.

usage: unit_seccomp.py ALLOWED NAMESPACES -- COMMAND...
  ALLOWED: the system calls the unit's SystemCallFilter= allows, space-separated
    (check_podman_caps.sh expands the groups with systemd-analyze syscall-filter);
    every other call fails with EPERM (SystemCallErrorNumber=EPERM).
  NAMESPACES: what RestrictNamespaces= allows: "none" (=yes), or a space-separated list
    of mnt pid uts ipc net cgroup user. As systemd does (src/shared/seccomp-util.c,
    seccomp_restrict_namespaces): unshare(), clone() and setns() with a forbidden flag
    fail with EPERM, setns() with no flag too, and clone3() fails with ENOSYS.
Needs no_new_privs (setpriv --no-new-privs) or CAP_SYS_ADMIN, as any seccomp filter.
An approximation: systemd also lets through the calls it needs to exec the service,
and builds one filter per architecture; tests use native calls only.
"""
import ctypes
import errno
import os
import sys

ALLOW = 0x7FFF0000


def act_errno(e):
    return 0x00050000 | (e & 0xFFFF)


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


SCMP_CMP_EQ, SCMP_CMP_MASKED_EQ = 4, 7
FLAGS = {"mnt": 0x00020000, "uts": 0x04000000, "ipc": 0x08000000, "user": 0x10000000,
         "pid": 0x20000000, "net": 0x40000000, "cgroup": 0x02000000}

lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                       ctypes.c_uint, ctypes.POINTER(ArgCmp)]
lib.seccomp_load.argtypes = [ctypes.c_void_p]


def nr(name):
    n = lib.seccomp_syscall_resolve_name(name.encode())
    return None if n < 0 else n


def add(ctx, action, name, *cmps):
    n = nr(name)
    if n is None:
        return
    arr = (ArgCmp * max(1, len(cmps)))(*cmps)
    r = lib.seccomp_rule_add_array(ctx, action, n, len(cmps), arr)
    if r < 0:
        sys.exit(f"unit_seccomp: rule for {name}: {os.strerror(-r)}")


def load(ctx):
    r = lib.seccomp_load(ctx)
    if r < 0:
        sys.exit(f"unit_seccomp: seccomp_load: {os.strerror(-r)}")


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit(__doc__)
    allowed = set(sys.argv[1].split())
    allowed_ns = set() if sys.argv[2] == "none" else set(sys.argv[2].split())

    # RestrictNamespaces=: loaded first (the allow list below would refuse seccomp() itself).
    if set(FLAGS) - allowed_ns:
        ctx = lib.seccomp_init(ALLOW)
        add(ctx, act_errno(errno.ENOSYS), "clone3")
        if not allowed_ns:
            add(ctx, act_errno(errno.EPERM), "setns")
        else:
            add(ctx, act_errno(errno.EPERM), "setns", ArgCmp(1, SCMP_CMP_EQ, 0, 0))
        for ns, flag in FLAGS.items():
            if ns in allowed_ns:
                continue
            add(ctx, act_errno(errno.EPERM), "unshare", ArgCmp(0, SCMP_CMP_MASKED_EQ, flag, flag))
            add(ctx, act_errno(errno.EPERM), "clone", ArgCmp(0, SCMP_CMP_MASKED_EQ, flag, flag))
            if allowed_ns:
                add(ctx, act_errno(errno.EPERM), "setns", ArgCmp(1, SCMP_CMP_MASKED_EQ, flag, flag))
        load(ctx)
    # SystemCallFilter=: an allow list, every other call EPERM; stacked on the one above.
    ctx = lib.seccomp_init(act_errno(errno.EPERM))
    for name in sorted(allowed):
        add(ctx, ALLOW, name)
    load(ctx)

    os.execvp(sys.argv[4], sys.argv[4:])


main()
