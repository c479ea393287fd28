import VaultCrypto
import VaultStore

// The ways a client makes the key material that `Vault`'s API takes, throwing the API's one error.

extension SecureBytes {
    /// A copy of `bytes` (a passphrase, a secret) in secure memory of its own: locked against swap,
    /// between guard pages, left out of core dumps, wiped when released. Wipe `bytes` yourself, or use
    /// `init(wipingSecret:)`.
    public convenience init(copyingSecret bytes: [UInt8]) throws(VaultError) {
        do {
            try self.init(copying: bytes, sharingAPage: false)
        } catch {
            throw VaultError(.allocate, "cannot hold \(bytes.count) bytes in secure memory: \(error)", cause: error)
        }
    }

    /// `bytes` moved into secure memory: the array is wiped (and emptied) whether or not this succeeds.
    public convenience init(wipingSecret bytes: inout [UInt8]) throws(VaultError) {
        let count = bytes.count
        do {
            try self.init(consuming: &bytes, sharingAPage: false)
        } catch {
            throw VaultError(.allocate, "cannot hold \(count) bytes in secure memory: \(error)", cause: error)
        }
    }
}

extension BackupKey {
    /// The backup key file at `path`: 32 raw bytes, a regular file owned by this user or root that group
    /// and others cannot access. Make one with `(umask 077 && head -c 32 /dev/urandom > FILE)`, and keep
    /// it apart from the backups it opens.
    public static func keyFile(at path: String) throws(VaultError) -> BackupKey {
        try translatingStoreErrors { () throws(StoreError) in try keyFile(path) }
    }
}
