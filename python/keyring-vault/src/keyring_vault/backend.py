"""keyring_vault.backend: `VaultKeyring`, a keyring backend over libvault.so.

Passwords are generic-password items: service = the keyring service, account = the username, in the
vault `VAULT_DIR` (else vault's default location) as the client `VAULT_APP_ID` (else "vault", the CLI's
own identity, so that `vault ls` shows them) with the groups of `VAULT_ACCESS_GROUPS`. A read of a vault
that does not exist finds nothing and creates nothing; the first `set_password` creates it.
"""

import ctypes
import ctypes.util
import os
import threading
import warnings

from jaraco.classes import properties
from keyring import backend, credentials, errors

VAULT_OK = 0
VAULT_ERR_NO_SUCH_VAULT = -25294
VAULT_ERR_NOT_FOUND = -25300
VAULT_ERR_BUFFER_TOO_SMALL = -25301
VAULT_OPEN_CREATE = 1

class _Item(ctypes.Structure):
    """vault_item_t: strings owned by the iterator, valid until vault_iter_free."""

    _fields_ = [
        ("group", ctypes.c_char_p),
        ("service", ctypes.c_char_p),
        ("account", ctypes.c_char_p),
        ("label", ctypes.c_char_p),
        ("created_unix_ms", ctypes.c_int64),
        ("modified_unix_ms", ctypes.c_int64),
    ]


_library = None
_library_lock = threading.Lock()


def _candidates():
    explicit = os.environ.get("VAULT_LIBRARY")
    if explicit:
        return [explicit]
    found = ctypes.util.find_library("vault")
    return [name for name in (found, "libvault.so.0", "libvault.so") if name]


def _load():
    """The library with every signature declared exactly as include/vault.h does."""
    global _library
    with _library_lock:
        if _library is not None:
            return _library
        problems = []
        for name in _candidates():
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError as error:
                problems.append(f"{name}: {error}")
        else:
            raise RuntimeError(
                "libvault.so cannot be loaded (" + "; ".join(problems) + "): install vault's C library "
                "(scripts/install puts it in PREFIX/lib) or set VAULT_LIBRARY to its path")
        p, s = ctypes.c_void_p, ctypes.c_char_p
        lib.vault_strerror.argtypes, lib.vault_strerror.restype = [ctypes.c_int32], s
        lib.vault_last_error_message.argtypes, lib.vault_last_error_message.restype = [], s
        for function, argtypes in {
            "vault_open": [s, s, ctypes.POINTER(s), ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(p)],
            "vault_close": [p],
            "vault_put": [p, s, s, s, ctypes.c_char_p, ctypes.c_uint64],
            "vault_get": [p, s, s, s, ctypes.c_char_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64)],
            "vault_remove": [p, s, s, s],
            "vault_list": [p, s, ctypes.POINTER(p)],
            "vault_iter_next": [p, ctypes.POINTER(_Item)],
            "vault_iter_free": [p],
        }.items():
            getattr(lib, function).argtypes = argtypes
            getattr(lib, function).restype = ctypes.c_int32
        _library = lib
        return lib


def _external_key():
    """Whether the key is external (VAULT_KEY_FILE, or a systemd credential), as libvault looks for it."""
    if os.environ.get("VAULT_KEY_FILE"):
        return True
    credentials_directory = os.environ.get("CREDENTIALS_DIRECTORY")
    return bool(credentials_directory) and os.path.exists(os.path.join(credentials_directory, "vault.key"))


def _text(value, what):
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise errors.KeyringError(f"the {what} is not valid UTF-8 text: {error}") from None


def _name(value, what):
    """A service or username for the C API, whose strings end at the first NUL: one with a NUL would
    name another item (`"svc\0x"` would be `"svc"`), so it is refused."""
    if "\0" in value:
        raise ValueError(f"the {what} {value!r} holds a NUL character, which vault names cannot hold")
    return _text(value, what)


class VaultKeyring(backend.KeyringBackend):
    """Passwords in vault (https://… the vault repository), through libvault.so."""

    @properties.classproperty
    def priority(cls):
        # Above the file backends (keyrings.cryptfile 2.5, keyrings.alt's plaintext 0.5), below a
        # desktop's keyring (Secret Service 5, KWallet 4.9), which wins where a session runs.
        try:
            _load()
        except RuntimeError as error:
            # keyring drops a backend whose priority fails without a word ("No recommended backend"):
            # an installed backend that cannot find its library says why.
            warnings.warn(f"keyring-vault: {error}", RuntimeWarning, stacklevel=2)
            raise
        return 3

    def __init__(self):
        super().__init__()
        self._handles = {}
        self._lock = threading.Lock()

    def _failure(self, lib, status, doing):
        name = lib.vault_strerror(status).decode()
        return errors.KeyringError(f"vault: cannot {doing}: {name} ({status}): {lib.vault_last_error_message().decode()}")

    def _vault(self, creating):
        """The cached handle for this environment's vault and client; None when there is no vault and
        `creating` is false. Handles stay valid in a forked child (vault reopens its lock there)."""
        lib = _load()
        key = (os.environ.get("VAULT_DIR"), os.environ.get("VAULT_APP_ID"), os.environ.get("VAULT_ACCESS_GROUPS"))
        with self._lock:
            handle = self._handles.get(key)
            if handle is not None:
                return lib, handle
            path = key[0].encode() if key[0] else None
            app = (key[1] or "vault").encode()
            names = [group.strip().encode() for group in (key[2] or "").split(",") if group.strip()]
            groups = (ctypes.c_char_p * max(len(names), 1))(*names)
            handle = ctypes.c_void_p()
            status = lib.vault_open(path, app, groups if names else None, len(names), VAULT_OPEN_CREATE if creating else 0, ctypes.byref(handle))
            if status == VAULT_ERR_NO_SUCH_VAULT and not creating and not _external_key():
                # No vault yet holds no password. Under an external key the vault was set up on purpose:
                # a missing one is a mistyped VAULT_DIR, an error.
                return lib, None
            if status != VAULT_OK:
                raise self._failure(lib, status, "open the vault")
            self._handles[key] = handle
            return lib, handle

    def get_password(self, service, username):
        lib, vault = self._vault(creating=False)
        if vault is None:
            return None
        # Into a buffer of ours, wiped after the copy (the str handed back cannot be wiped); retried
        # once with the length the library asks for when the secret is larger.
        capacity = 1024
        for _ in range(2):
            buffer = ctypes.create_string_buffer(capacity)
            length = ctypes.c_uint64()
            status = lib.vault_get(vault, None, _name(service, "service"), _name(username or "", "username"),
                                   buffer, capacity, ctypes.byref(length))
            if status == VAULT_ERR_BUFFER_TOO_SMALL:
                capacity = length.value
                continue
            try:
                if status == VAULT_ERR_NOT_FOUND:
                    return None
                if status != VAULT_OK:
                    raise self._failure(lib, status, f"read the password of {service!r}")
                try:
                    return buffer.raw[: length.value].decode("utf-8")
                except UnicodeDecodeError:
                    raise errors.KeyringError(
                        f"vault: the password of {service!r} is not UTF-8 text (stored by another client): "
                        "keyring passwords are text; read it with `vault get`") from None
            finally:
                ctypes.memset(buffer, 0, capacity)
        raise errors.KeyringError(f"vault: the password of {service!r} kept growing while it was read")

    def set_password(self, service, username, password):
        lib, vault = self._vault(creating=True)
        data = _text(password, "password")
        status = lib.vault_put(vault, None, _name(service, "service"), _name(username or "", "username"), data, len(data))
        if status != VAULT_OK:
            raise errors.PasswordSetError(str(self._failure(lib, status, f"store the password of {service!r}")))

    def delete_password(self, service, username):
        lib, vault = self._vault(creating=False)
        status = VAULT_ERR_NOT_FOUND if vault is None else lib.vault_remove(
            vault, None, _name(service, "service"), _name(username or "", "username"))
        if status == VAULT_ERR_NOT_FOUND:
            raise errors.PasswordDeleteError(f"no password for {username!r} of {service!r} in vault")
        if status != VAULT_OK:
            raise errors.PasswordDeleteError(str(self._failure(lib, status, f"delete the password of {service!r}")))

    def get_credential(self, service, username):
        """The credential of `username` for `service`; without a username, that of the service's first
        account (the oldest item)."""
        if username is None:
            username = self._first_account(service)
            if username is None:
                return None
        password = self.get_password(service, username)
        return None if password is None else credentials.SimpleCredential(username, password)

    def _first_account(self, service):
        lib, vault = self._vault(creating=False)
        if vault is None:
            return None
        iterator = ctypes.c_void_p()
        status = lib.vault_list(vault, None, ctypes.byref(iterator))
        if status != VAULT_OK:
            raise self._failure(lib, status, f"list the accounts of {service!r}")
        wanted = _name(service, "service")
        try:
            item = _Item()
            while lib.vault_iter_next(iterator, ctypes.byref(item)) == VAULT_OK:
                if item.service == wanted:
                    return item.account.decode("utf-8")
            return None
        finally:
            lib.vault_iter_free(iterator)
