#!/usr/bin/env python3
"""A non-Swift consumer of the vault: the C API (include/vault.h) through Python's ctypes.

    python3 vault_example.py VAULT_DIR

Loads libvault.so (from $VAULT_LIBRARY, else the dynamic linker's search path, e.g. LD_LIBRARY_PATH),
creates or opens the vault at VAULT_DIR as the client "com.example.python", stores a secret, reads it
back both ways (caller's buffer with size negotiation, and a secure-memory buffer), lists the items,
prints the device identifier and removes the item. Exits non-zero on any unexpected status.
"""
import ctypes
import os
import sys
import uuid

VAULT_OK = 0
VAULT_ERR_NOT_FOUND = -25300
VAULT_ERR_BUFFER_TOO_SMALL = -25301
VAULT_OPEN_CREATE = 1


class VaultItem(ctypes.Structure):
    """vault_item_t: strings owned by the iterator, valid until vault_iter_free."""

    _fields_ = [
        ("group", ctypes.c_char_p),
        ("service", ctypes.c_char_p),
        ("account", ctypes.c_char_p),
        ("label", ctypes.c_char_p),
        ("created_unix_ms", ctypes.c_int64),
        ("modified_unix_ms", ctypes.c_int64),
    ]


def load(path):
    lib = ctypes.CDLL(path)
    # Declare every signature exactly as vault.h does (handles are opaque pointers).
    p = ctypes.c_void_p
    s = ctypes.c_char_p
    u8p = ctypes.POINTER(ctypes.c_uint8)
    lib.vault_strerror.argtypes, lib.vault_strerror.restype = [ctypes.c_int32], s
    lib.vault_last_error_message.argtypes, lib.vault_last_error_message.restype = [], s
    signatures = {
        "vault_open": [s, s, ctypes.POINTER(s), ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(p)],
        "vault_close": [p],
        "vault_put": [p, s, s, s, ctypes.c_char_p, ctypes.c_uint64],
        "vault_get": [p, s, s, s, ctypes.c_char_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)],
        "vault_get_secret": [p, s, s, s, ctypes.POINTER(u8p), ctypes.POINTER(ctypes.c_uint64)],
        "vault_free_secret": [u8p],
        "vault_remove": [p, s, s, s],
        "vault_list": [p, s, ctypes.POINTER(p)],
        "vault_iter_next": [p, ctypes.POINTER(VaultItem)],
        "vault_iter_free": [p],
        "vault_device_id": [p, s, ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_uint8)],
        "vault_fleet_cache_status": [p, s, ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_int64)],
        "vault_require_fresh_fleet_reads": [p, ctypes.c_int32],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = ctypes.c_int32
    return lib


class VaultError(Exception):
    def __init__(self, lib, status):
        self.status = status
        name = lib.vault_strerror(status).decode()
        message = lib.vault_last_error_message().decode()
        super().__init__(f"{name} ({status}): {message}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    library = os.environ.get("VAULT_LIBRARY", "libvault.so")
    try:
        lib = load(library)
    except OSError as error:
        sys.exit(f"vault_example: cannot load {library} ({error}): install vault's C library (scripts/install "
                 "puts libvault.so in PREFIX/lib, then run ldconfig) or set VAULT_LIBRARY to its path")

    def check(status, *allowed):
        if status != VAULT_OK and status not in allowed:
            raise VaultError(lib, status)
        return status

    vault = ctypes.c_void_p()
    check(lib.vault_open(sys.argv[1].encode(), b"com.example.python", None, 0, VAULT_OPEN_CREATE,
                         ctypes.byref(vault)))
    try:
        secret = b"hunter2 \x00 with a NUL"
        check(lib.vault_put(vault, None, b"example.service", b"python", secret, len(secret)))

        # Caller's buffer: ask for the size, then read.
        length = ctypes.c_uint64()
        status = check(lib.vault_get(vault, None, b"example.service", b"python", None, 0, ctypes.byref(length)),
                       VAULT_ERR_BUFFER_TOO_SMALL)
        assert status == VAULT_ERR_BUFFER_TOO_SMALL and length.value == len(secret)
        buffer = ctypes.create_string_buffer(length.value)
        check(lib.vault_get(vault, None, b"example.service", b"python", buffer, len(buffer), ctypes.byref(length)))
        assert buffer.raw[: length.value] == secret
        print(f"vault_get: {length.value} bytes, as stored")

        # Secure memory: copy out what is needed, then wipe and free.
        pointer = ctypes.POINTER(ctypes.c_uint8)()
        check(lib.vault_get_secret(vault, None, b"example.service", b"python", ctypes.byref(pointer),
                                   ctypes.byref(length)))
        try:
            assert ctypes.string_at(pointer, length.value) == secret
            print(f"vault_get_secret: {length.value} bytes in secure memory")
        finally:
            check(lib.vault_free_secret(pointer))

        # The attributes of every item, never the secrets.
        iterator = ctypes.c_void_p()
        check(lib.vault_list(vault, None, ctypes.byref(iterator)))
        try:
            item = VaultItem()
            while check(lib.vault_iter_next(iterator, ctypes.byref(item)), VAULT_ERR_NOT_FOUND) == VAULT_OK:
                print(f"item: group={item.group.decode()} service={item.service.decode()} "
                      f"account={item.account.decode()}")
        finally:
            check(lib.vault_iter_free(iterator))

        identifier = (ctypes.c_uint8 * 16)()
        created = ctypes.c_uint8()
        check(lib.vault_device_id(vault, None, identifier, ctypes.byref(created)))
        print(f"device id: {uuid.UUID(bytes=bytes(identifier))} (created now: {bool(created.value)})")

        # Errors are statuses with a message naming the item.
        try:
            check(lib.vault_get(vault, None, b"example.service", b"nobody", None, 0, ctypes.byref(length)))
            raise AssertionError("expected not found")
        except VaultError as error:
            assert error.status == VAULT_ERR_NOT_FOUND
            print(f"as expected: {error}")

        check(lib.vault_remove(vault, None, b"example.service", b"python"))
    finally:
        check(lib.vault_close(vault))
    print("python example: ok")


if __name__ == "__main__":
    main()
