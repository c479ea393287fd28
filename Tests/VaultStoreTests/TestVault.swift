import Foundation
import VaultStore

/// A vault path in a fresh temp directory; `remove()` deletes the whole tree.
struct TestVault {
    let root: String
    let path: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("vault-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        path = root + "/vault"
    }

    func remove() {
        // Make everything removable again (tests chmod things).
        _ = try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
        try? FileManager.default.removeItem(atPath: root)
    }

    func file(_ relative: String) -> String { path + "/" + relative }

    func bytes(_ relative: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: file(relative))))
    }

    func write(_ bytes: [UInt8], to relative: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: file(relative)))
    }

    func mode(_ relative: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: file(relative))[.posixPermissions] as! NSNumber).intValue
    }

    func chmod(_ relative: String, _ mode: Int) throws {
        try FileManager.default.setAttributes(
            [.posixPermissions: mode], ofItemAtPath: relative.isEmpty ? path : file(relative))
    }

    func entries(_ relative: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: file(relative)).sorted()
    }
}
