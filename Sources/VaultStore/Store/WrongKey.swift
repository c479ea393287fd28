import VaultCrypto
import VaultSystem

extension VaultStore {
    /// The refusal of a marker that does not verify under the master key this open has (`failure`):
    /// a wrong key (`wrongKey`: a key file of another vault, a stale one after `vault rekey
    /// --new-key-file`, another vault's `master.key`) when `classes.key`, sealed under the same key, does
    /// not open either; `failure` (the marker was altered) when it does, or when the vault has none.
    static func wrongKeyOrAlteredMarker(
        _ failure: StoreError, location: FilePath, directory: FileDescriptor, markerBytes: [UInt8],
        classKeys: ClassKeys, keySource: KeySource
    ) -> StoreError {
        guard let unverified = try? VaultMarker.unverified(markerBytes, path: location / VaultMarker.fileName),
            unverified.hasItemClassKeys
        else { return failure }
        do {
            _ = try ItemClassKeyFile.load(
                in: directory, vaultPath: location, vaultID: unverified.vaultID, classKeys: classKeys)
            return failure
        } catch  where error.code == .integrity && error.cause is CryptoError {
            // Its authentication failed (its header matched the marker's vault id): another key.
            let key = keySource.keyFile ?? (location / MasterKeyFile.fileName).string
            let advice =
                keySource.keyFile != nil
                ? "give this vault's key file (after `vault rekey --new-key-file`, the new one)"
                : "it belongs to another vault or was replaced: restore this vault's master.key from a backup"
            return StoreError(
                .wrongKey,
                "the key in \(key) does not open the vault at \(location) (neither its marker nor classes.key "
                    + "verifies under it): \(advice)",
                path: key)
        } catch {
            return failure
        }
    }
}
