import Foundation
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// The reader of format-1 vaults that the upgrade uses, on the committed fixture.
@Suite struct FormatOneVaultTests {
    let group = try! GroupName("com.example.app")

    /// The fixture's reader, with its class keys and vault id.
    func reader(_ vault: TemporaryVault, _ body: (FormatOneVault) throws -> Void) throws {
        let location = FilePath(vault.path)
        let directory = try VaultDirectory.open(location)
        defer { try? directory.close() }
        let marker = try vault.bytes("VAULT")
        let classKeys = try VaultStore.loadClassKeys(
            directory: directory, path: location, markerBytes: marker, keySource: KeySource())
        let groups = try VaultDirectory.openSubdirectory("groups", in: directory, path: location / "groups")
        defer { try? groups.close() }
        try body(
            FormatOneVault(
                location: location, groupsDirectory: groups, classKeys: classKeys, vaultID: Array(marker[8..<24])))
    }

    /// An item whose generation record says a later generation, with a tag that verifies under the
    /// group's format-1 index key, was replaced with an older copy of itself: the reader refuses it,
    /// named. A record whose tag does not verify (of another persistent id) is no such evidence.
    @Test func aRolledBackItemStopsTheReader() throws {
        try withTemporaryVault("v1-rollback") { vault in
            try FormatOneFixture.plain.copy(to: vault.path)
            try reader(vault) { old in
                // Every item read as generation 1 of one persistent id.
                let persistentID = [UInt8](repeating: 4, count: 16)
                let asGenerationOne: VaultStore.ItemRecordReader = { _ in
                    (ItemVersion(persistentID: persistentID, generation: 1), [1])
                }
                let items = try old.items(in: group, records: asGenerationOne)
                #expect(items.count == 2)
                let id = try #require(items.first?.id)
                let index = try KeyDerivation.subkeys([
                    KeyDerivation.Derivation(
                        of: old.classKeys.always, domain: FormatOneVault.indexDomain,
                        context: Array(group.rawValue.utf8))
                ])[0]
                let tag = try GenerationRecord.tag(
                    key: index, binding: old.vaultID, location: ItemLocation(group: group, id: id),
                    version: ItemVersion(persistentID: persistentID, generation: 5))
                let record = vault.file("groups/\(group)/\(GenerationRecord.name(id))")
                try? FileManager.default.removeItem(atPath: record)
                try FileManager.default.createSymbolicLink(
                    atPath: record, withDestinationPath: GenerationRecord.text(generation: 5, tag: tag))
                let error = #expect(throws: StoreError.self) { try old.items(in: group, records: asGenerationOne) }
                #expect(error?.code == .integrity)
                #expect(error?.message.contains("rollback") == true && error?.message.contains(id.fileName) == true)
            }
        }
    }
}
