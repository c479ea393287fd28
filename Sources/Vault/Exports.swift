// The types of the lower layers that `Vault`'s API takes or returns (a key source and its passphrase
// requests, a secret's bytes, a backup key, a protection class), re-exported: a client of `Vault`
// imports nothing else. Everything else of those layers is `package`: their errors reach a client only
// as a `VaultError`'s cause, and system-call types (file descriptors, errno, paths) not at all, so that
// a client that has its own, or swift-system's, sees no ambiguity.

@_exported import enum VaultCrypto.PassphraseKeyDerivation
@_exported import class VaultCrypto.SecureBytes
@_exported import enum VaultStore.BackupFile
@_exported import struct VaultStore.BackupKey
@_exported import struct VaultStore.KeySource
@_exported import enum VaultStore.PassphrasePurpose
@_exported import struct VaultStore.PassphraseRequest
@_exported import enum VaultStore.ProtectionClass
@_exported import enum VaultStore.UnlockOutcome
