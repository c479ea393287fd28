// The types of the lower layers that `Vault`'s API takes or returns (a key source, a secret's bytes, a
// backup key, the store's error as a cause), re-exported: a client of `Vault` imports nothing else.
// System-call types (file descriptors, errno, paths) are not part of that API and stay in VaultSystem,
// so that a client that has its own, or swift-system's, sees no ambiguity.

@_exported import struct VaultCrypto.CryptoError
@_exported import enum VaultCrypto.PassphraseKeyDerivation
@_exported import class VaultCrypto.SecureBytes
@_exported import struct VaultCrypto.SymmetricKey
@_exported import enum VaultCrypto.Wiping
@_exported import enum VaultStore.BackupFile
@_exported import struct VaultStore.BackupKey
@_exported import struct VaultStore.KeySource
@_exported import enum VaultStore.PassphrasePurpose
@_exported import struct VaultStore.PassphraseRequest
@_exported import enum VaultStore.ProtectionClass
@_exported import struct VaultStore.StoreError
@_exported import enum VaultStore.UnlockOutcome
@_exported import enum VaultStore.VaultLocation
