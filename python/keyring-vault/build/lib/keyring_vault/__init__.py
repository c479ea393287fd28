"""A keyring backend over vault's C API (libvault.so), through ctypes."""

from .backend import VaultKeyring

__all__ = ["VaultKeyring"]
