import Testing
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// The "racy clean" rule of the attribute cache: a fingerprint is trusted only for a file changed
/// before the clock reading taken ahead of the look-up.
@Suite struct ItemFingerprintTests {
    func fingerprint(changedAt change: Int64) -> ItemFingerprint {
        ItemFingerprint(
            recordText: nil, device: 1, inode: 2, size: 3, modificationNanoseconds: change, changeNanoseconds: change)
    }

    @Test func onlyAFileChangedBeforeTheReadingIsSettled() {
        let now: Int64 = 1_800_000_000_000_000_000
        #expect(fingerprint(changedAt: now - 1).isSettled(now: now))
        #expect(!fingerprint(changedAt: now).isSettled(now: now))  // the same tick: a replacement could match
        #expect(!fingerprint(changedAt: now + 4_000_000).isSettled(now: now))  // a fine-grained stamp after it
    }

    @Test func aFileJustWrittenIsNotSettledAgainstAReadingTakenBefore() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let group = try GroupName("clock")
            let id = try store.itemID(group: group, primaryKey: [1])
            let before = FileTimestampClock.now()
            try store.put([1], group: group, id: id)
            let written = try #require(try store.fingerprint(group: group, id: id))
            #expect(!written.isSettled(now: before))
            var later = FileTimestampClock.now()
            while later <= written.changeNanoseconds {  // the next tick
                later = FileTimestampClock.now()
            }
            #expect(written.isSettled(now: later))
        }
    }
}
