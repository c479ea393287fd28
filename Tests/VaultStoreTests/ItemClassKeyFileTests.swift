import Foundation
import Testing
import VaultCrypto
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// `classes.key`: the item class keys, each sealed under the class key of its class.
@Suite struct ItemClassKeyFileTests {
    let vaultID = [UInt8](repeating: 7, count: 16)

    /// A file of random item class keys sealed under random class keys, in `directory`.
    func written(in directory: TemporaryDirectory) throws -> (items: ClassKeys, classes: ClassKeys) {
        let items = try ItemClassKeyFile.random()
        let classes = try ItemClassKeyFile.random()
        let fd = try directory.open()
        defer { try? fd.close() }
        try ItemClassKeyFile.write(items, under: classes, vaultID: vaultID, in: fd, vaultPath: FilePath(directory.path))
        return (items, classes)
    }

    func load(_ directory: TemporaryDirectory, classKeys: ClassKeys, vaultID: [UInt8]? = nil) throws -> ClassKeys? {
        let fd = try directory.open()
        defer { try? fd.close() }
        return try ItemClassKeyFile.load(
            in: fd, vaultPath: FilePath(directory.path), vaultID: vaultID ?? self.vaultID, classKeys: classKeys)
    }

    @Test func theKeysReadBackAndALockedClassStaysClosed() throws {
        try withTemporaryDirectory("icls") { directory in
            let (items, classes) = try written(in: directory)
            let read = try #require(try load(directory, classKeys: classes))
            for protectionClass in ProtectionClass.allCases {
                #expect(read.key(protectionClass) == items.key(protectionClass), "\(protectionClass)")
            }
            // A passphrase vault opened without its passphrase has the `always` class key only.
            let locked = ClassKeys(always: classes.always, afterFirstUnlock: nil, whenUnlocked: nil)
            let lockedRead = try #require(try load(directory, classKeys: locked))
            #expect(lockedRead.always == items.always)
            #expect(lockedRead.afterFirstUnlock == nil && lockedRead.whenUnlocked == nil)
        }
        try withTemporaryDirectory("icls-none") { directory in
            let classes = try ItemClassKeyFile.random()
            #expect(try load(directory, classKeys: classes) == nil)
        }
    }

    /// A flipped byte of an entry is refused naming its class; of the header, as not this vault's; a
    /// flip in a class this process cannot open goes unseen until it can.
    @Test func everyFlipIsRefusedNamingWhatFailed() throws {
        try withTemporaryDirectory("icls-flip") { directory in
            let (items, classes) = try written(in: directory)
            let name = ItemClassKeyFile.fileName
            let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory.file(name))))
            #expect(original.count == ItemClassKeyFile.byteCount)
            for index in original.indices {
                var flipped = original
                flipped[index] ^= 0x20
                try Data(flipped).write(to: URL(fileURLWithPath: directory.file(name)))
                let error = #expect(throws: StoreError.self, "byte \(index)") {
                    _ = try load(directory, classKeys: classes)
                }
                #expect(error?.code == .integrity, "byte \(index)")
                let message = error?.message ?? ""
                if index < ItemClassKeyFile.headerByteCount {
                    #expect(message.contains("is not this vault's item class key file"), "byte \(index): \(message)")
                } else {
                    let entry = (index - ItemClassKeyFile.headerByteCount) / ItemClassKeyFile.entryByteCount
                    let protectionClass = ProtectionClass.allCases[entry]
                    #expect(
                        message.contains("failed authentication for class \(protectionClass)"),
                        "byte \(index): \(message)")
                    #expect(error?.path == directory.file(name))
                    if protectionClass != .always {
                        let locked = ClassKeys(always: classes.always, afterFirstUnlock: nil, whenUnlocked: nil)
                        #expect(try load(directory, classKeys: locked)?.always != nil, "byte \(index)")
                    }
                }
            }
            // Without the afterFirstUnlock key the whenUnlocked entry is the second opened: still named
            // by its class, and a flip in the afterFirstUnlock entry goes unseen.
            let gap = ClassKeys(always: classes.always, afterFirstUnlock: nil, whenUnlocked: classes.whenUnlocked)
            for (entry, refused) in [(ProtectionClass.whenUnlocked, true), (.afterFirstUnlock, false)] {
                var flipped = original
                flipped[
                    ItemClassKeyFile.headerByteCount + Int(entry.rawValue) * ItemClassKeyFile.entryByteCount + 30] ^= 1
                try Data(flipped).write(to: URL(fileURLWithPath: directory.file(name)))
                if refused {
                    let error = #expect(throws: StoreError.self) { _ = try load(directory, classKeys: gap) }
                    #expect(error?.message.contains("failed authentication for class \(entry)") == true)
                } else {
                    let read = try #require(try load(directory, classKeys: gap))
                    #expect(read.afterFirstUnlock == nil && read.whenUnlocked == items.whenUnlocked)
                }
            }
            try Data(original).write(to: URL(fileURLWithPath: directory.file(name)))
            let error = #expect(throws: StoreError.self) {
                _ = try load(directory, classKeys: try ItemClassKeyFile.random())
            }
            #expect(error?.message.contains("failed authentication for class \(ProtectionClass.always)") == true)
            let foreign = #expect(throws: StoreError.self) {
                _ = try load(directory, classKeys: classes, vaultID: [UInt8](repeating: 8, count: 16))
            }
            #expect(foreign?.message.contains("is not this vault's item class key file") == true)
        }
    }

    /// The file gets a key file's checks: exact size, mode 0600.
    @Test func aFileOfAnotherSizeOrModeIsRefused() throws {
        try withTemporaryDirectory("icls-checks") { directory in
            let (_, classes) = try written(in: directory)
            let path = directory.file(ItemClassKeyFile.fileName)
            try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
            let exposed = #expect(throws: StoreError.self) { _ = try load(directory, classKeys: classes) }
            #expect(exposed?.code == .insecureFile)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            try Data(bytes.dropLast()).write(to: URL(fileURLWithPath: path))
            let short = #expect(throws: StoreError.self) { _ = try load(directory, classKeys: classes) }
            #expect(short?.code == .integrity)
            #expect(
                short?.message.contains("is \(bytes.count - 1) bytes, not \(bytes.count)") == true,
                "\(String(describing: short))")
            #expect(short?.message.contains("head -c") == false, "no advice to make a key file by hand")
        }
    }
}
