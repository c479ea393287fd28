// The types of the lower layers that `Vault`'s API takes or returns, and those a keychain tool needs
// for its own input, output and identity, re-exported: a client of `Vault` imports nothing else.

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
@_exported import enum VaultSystem.ChildProcess
@_exported import struct VaultSystem.Errno
@_exported import struct VaultSystem.FileDescriptor
@_exported import struct VaultSystem.FilePath
@_exported import enum VaultSystem.ProcessIdentity
@_exported import struct VaultSystem.SystemCallError
@_exported import enum VaultSystem.SystemOperation
@_exported import enum VaultSystem.UTCTimestamp
@_exported import struct VaultSystem.UnixGroupError
@_exported import enum VaultSystem.UserDatabase
