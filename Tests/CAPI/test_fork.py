#!/usr/bin/env python3
"""What a forked child may do with a vault_t its parent opened (docs/C-API.md, "After fork()").

    python3 test_fork.py VAULT_DIR VAULT_CLI

Opens (creating) the vault at VAULT_DIR through libvault.so with ctypes, writes through the handle,
then os.fork()s six children that each write 40 values of their own account and of a shared one
through the inherited handle while the parent does the same (a pre-fork server, or Python
multiprocessing with the fork start method). Afterwards every value must be the last one its writer
wrote, and `vault check` (VAULT_CLI) must find every item file sound. Exits non-zero otherwise.
"""
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "python"))
import vault_example  # noqa: E402  (the ctypes signatures of vault.h)

APP = b"com.example.fork"
CHILDREN = 6
COUNT = 40


def main():
    path, cli = sys.argv[1], sys.argv[2]
    lib = vault_example.load(os.environ.get("VAULT_LIBRARY", "libvault.so"))
    handle = ctypes.c_void_p()
    status = lib.vault_open(path.encode(), APP, None, 0, vault_example.VAULT_OPEN_CREATE, ctypes.byref(handle))
    assert status == 0, lib.vault_last_error_message()

    def put(account, value):
        data = value.encode()
        status = lib.vault_put(handle, None, b"fork", account.encode(), data, len(data))
        if status != 0:
            raise RuntimeError(f"put {account}: {status} {lib.vault_last_error_message().decode()}")

    put("parent", "parent-start")

    def write(name):
        for i in range(COUNT):
            put(name, f"{name}-{i}")
            put("shared", f"{name}-{i}")

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
    buffer = ctypes.create_string_buffer(256)
    length = ctypes.c_uint64()
    last = {}
    for name in writers + ["shared"]:
        status = lib.vault_get(handle, None, b"fork", name.encode(), buffer, 256, ctypes.byref(length))
        assert status == 0, f"get {name}: {status} {lib.vault_last_error_message().decode()}"
        last[name] = buffer.raw[: length.value].decode()
    for name in writers:
        assert last[name] == f"{name}-{COUNT - 1}", f"{name}: {last[name]}"
    assert last["shared"] in {f"{name}-{COUNT - 1}" for name in writers}, last["shared"]
    lib.vault_close(handle)
    check = subprocess.run([cli, "--vault", path, "check"], capture_output=True, text=True)
    assert check.returncode == 0, f"vault check: {check.returncode} {check.stderr}"
    print(f"fork: {CHILDREN} children and their parent wrote {COUNT * 2} values each through one inherited "
          "vault_t: every value right, every item file sound")


if __name__ == "__main__":
    main()
