import VaultCrypto
import VaultSystem

/// `always.key` of a passphrase vault: the `always` class key, kept plainly so that `Always` items
/// can be read without unlocking (with the same checks as `master.key`), followed by check values of
/// the other two class keys (BLAKE2b-128 keyed by each, "vault.class.chk"), so that a key taken from
/// the unlock cache is known to be this vault's before it is used: 32 + 16 + 16 bytes.
struct AlwaysKeyFile {
    static let fileName = "always.key"
    static let checkByteCount = 16
    static let byteCount = SymmetricKey.byteCount + 2 * checkByteCount
    static let checkDomain = KeyDerivation.Domain("vault.class.chk")

    let always: SymmetricKey
    let checks: [ProtectionClass: [UInt8]]

    /// Whether `key` is this vault's key of `protectionClass`.
    func verifies(_ key: SymmetricKey, _ protectionClass: ProtectionClass) -> Bool {
        guard let expected = checks[protectionClass], let actual = try? Self.checkValue(key) else { return false }
        return expected == actual
    }

    static func checkValue(_ key: SymmetricKey) throws(CryptoError) -> [UInt8] {
        try KeyDerivation.keyedHash([], key: key, domain: checkDomain, outputByteCount: checkByteCount)
    }

    /// The file `name` of the vault directory, or nil when there is none.
    static func load(in directory: FileDescriptor, vaultPath: FilePath, name: String = fileName)
        throws(StoreError) -> AlwaysKeyFile?
    {
        KeyFile.protectProcess()
        let path = vaultPath / name
        guard
            let contents = try KeyFile.readIfPresent(
                name, in: directory, path: path, ownerMayBeRoot: false, sizes: [Int64(byteCount)])
        else { return nil }
        // The key and the check values are two equal halves: the key a view of the one allocation.
        let halves = contents.split(into: SymmetricKey.byteCount)
        do {
            let always = try SymmetricKey(halves[0])
            let tail = halves[1].unprotectedCopy()
            return AlwaysKeyFile(
                always: always,
                checks: [
                    .afterFirstUnlock: Array(tail[0..<checkByteCount]), .whenUnlocked: Array(tail[checkByteCount...]),
                ])
        } catch {
            throw StoreError.crypto(error, "cannot hold the always class key in secure memory")
        }
    }

    /// Writes the file `name` of the vault directory for `keys` (all of them must be at hand).
    static func write(_ keys: ClassKeys, in directory: FileDescriptor, vaultPath: FilePath, name: String = fileName)
        throws(StoreError)
    {
        guard let afterFirstUnlock = keys.afterFirstUnlock, let whenUnlocked = keys.whenUnlocked else {
            throw StoreError(.locked, "the class keys of \(vaultPath) are not all available")
        }
        let contents: SecureBytes
        do {
            contents = try keys.always.bytes.appending(try checkValue(afterFirstUnlock) + checkValue(whenUnlocked))
        } catch {
            throw StoreError.crypto(error, "cannot write \(vaultPath / fileName)")
        }
        try AtomicFile.replace(name, contents: .secret(contents), in: directory, directoryPath: vaultPath)
    }
}
