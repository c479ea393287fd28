#!/usr/bin/env python3
"""The fork rule on a fleet group (docs/C-API.md, "After fork()"; docs/FLEET.md, "Freshness").

    python3 test_fleet_fork.py SCRATCH VAULT_CLI ENDPOINTS

Makes a format-2 vault in SCRATCH with a fleet group on the etcd cluster ENDPOINTS (the CLI, which
hands the group commands to vault-fleet beside it), opens it through libvault.so, reads the group (the
parent's replica then has an etcd connection and a watch thread), then os.fork()s four children that
each write 10 values of their own account and of a shared one through the inherited handle, reading
each back, while the parent does the same. A child never has its parent's watch thread or connection:
it must make its own. Afterwards every value is its writer's last, read through the handle and
through the CLI (a separate process asking etcd), and the parent's last answer was confirmed by etcd.
"""
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
import vault_example  # noqa: E402  (the ctypes signatures of vault.h)

APP = b"com.example.fleet-fork"
GROUP = b"fleet"
CHILDREN = 4
COUNT = 10


def main():
    scratch, cli, endpoints = sys.argv[1], sys.argv[2], sys.argv[3]
    path = os.path.join(scratch, "vault")
    environment = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    for arguments in (["init"], ["group", "create", "fleet", "--etcd", endpoints]):
        done = subprocess.run([cli, "--vault", path] + arguments, capture_output=True, text=True, env=environment,
                              timeout=60)
        assert done.returncode == 0, f"vault {' '.join(arguments)}: {done.returncode} {done.stderr}"

    lib = vault_example.load(os.environ.get("VAULT_LIBRARY", "libvault.so"))
    handle = ctypes.c_void_p()
    groups = (ctypes.c_char_p * 1)(GROUP)
    status = lib.vault_open(path.encode(), APP, groups, 1, 0, ctypes.byref(handle))
    assert status == 0, lib.vault_last_error_message()

    def put(account, value):
        data = value.encode()
        status = lib.vault_put(handle, GROUP, b"fork", account.encode(), data, len(data))
        if status != 0:
            raise RuntimeError(f"put {account}: {status} {lib.vault_last_error_message().decode()}")

    def get(account):
        buffer = ctypes.create_string_buffer(256)
        length = ctypes.c_uint64()
        status = lib.vault_get(handle, GROUP, b"fork", account.encode(), buffer, 256, ctypes.byref(length))
        if status != 0:
            raise RuntimeError(f"get {account}: {status} {lib.vault_last_error_message().decode()}")
        return buffer.raw[: length.value].decode()

    put("parent", "parent-start")
    assert get("parent") == "parent-start"

    def write(name):
        for i in range(COUNT):
            put(name, f"{name}-{i}")
            put("shared", f"{name}-{i}")
            seen = get(name)
            if seen != f"{name}-{i}":
                raise RuntimeError(f"{name} read {seen!r} after writing {name}-{i}")

    pids = []
    for n in range(CHILDREN):
        pid = os.fork()
        if pid == 0:
            try:
                write(f"child-{n}")
                os._exit(0)
            except Exception as error:  # noqa: BLE001
                print(f"child-{n}: {error}", file=sys.stderr)
                os._exit(1)
        pids.append(pid)
    write("parent")
    failed = [pid for pid in pids if os.waitpid(pid, 0)[1] != 0]
    assert not failed, f"{len(failed)} children failed"

    writers = ["parent"] + [f"child-{n}" for n in range(CHILDREN)]
    assert lib.vault_require_fresh_fleet_reads(handle, 1) == 0
    last = {name: get(name) for name in writers + ["shared"]}
    for name in writers:
        assert last[name] == f"{name}-{COUNT - 1}", f"{name}: {last[name]}"
    assert last["shared"] in {f"{name}-{COUNT - 1}" for name in writers}, last["shared"]
    stale = ctypes.c_uint8(9)
    assert lib.vault_fleet_cache_status(handle, GROUP, ctypes.byref(stale), None) == 0
    assert stale.value == 0, "the parent's answers were confirmed by etcd"
    lib.vault_close(handle)
    for name in writers + ["shared"]:
        done = subprocess.run([cli, "--vault", path, "--group", "fleet", "get", "fork", name], capture_output=True,
                              text=True, env=environment, timeout=60)
        assert done.returncode == 0 and done.stdout == last[name], f"vault get {name}: {done.returncode} {done.stderr}"
    print(f"fleet fork: {CHILDREN} children and their parent wrote {COUNT * 2} values each to a fleet group "
          "through one inherited vault_t: every value right, through the handle and the CLI")


if __name__ == "__main__":
    main()
