import VaultSystem

/// An owner's open that meets a rekey: the rekey may switch the key files between the open's reads of
/// them, so the open tries again while one is under way or has just replaced `VAULT`.
extension VaultStore {
    /// `openAsOwner`, again when its key files did not match each other while a rekey was under way or
    /// replaced `VAULT` meanwhile: the rekey may have switched them between this open's reads (it began
    /// after the open looked for its journal, and may have ended before the open read the marker). Each
    /// attempt waits for a running rekey's lock and reads its result; a damaged vault or a wrong key,
    /// with no rekey about, fails at once.
    static func openAsOwnerThroughRekeys(
        _ location: FilePath, keySource: KeySource, versions: ItemVersionReader?, replication: (any Replication)?
    ) throws(StoreError) -> VaultStore {
        var attempt = 1
        while true {
            let marker = markerIdentity(location)
            do {
                return try openAsOwner(location, keySource: keySource, versions: versions, replication: replication)
            } catch
                where (error.code == .integrity || error.code == .wrongKey) && attempt < 3
                && (rekeyUnderWay(location) || markerIdentity(location) != marker)
            {
                attempt += 1
            }
        }
    }

    /// Which file `VAULT` is (device, inode, change time): every rekey replaces it.
    private static func markerIdentity(_ location: FilePath) -> [Int64]? {
        guard
            let status = try? FileDescriptor.currentWorkingDirectory.statusAt(
                (location / VaultMarker.fileName).string)
        else { return nil }
        return [Int64(bitPattern: status.device), Int64(bitPattern: status.inode), status.changeNanoseconds]
    }

    /// Whether a rekey journal is in the vault at `location` now.
    private static func rekeyUnderWay(_ location: FilePath) -> Bool {
        (try? FileDescriptor.currentWorkingDirectory.statusAt((location / RekeyJournal.fileName).string)) != nil
    }
}
