import Foundation

/// A copy of `Fixtures/<name>` (a vault an earlier build wrote) at `path`, with the modes a vault has
/// (git keeps none of them).
func copyStoreFixture(_ name: String, to path: String) throws {
    let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/\(name)").path
    try? FileManager.default.removeItem(atPath: path)
    try FileManager.default.copyItem(atPath: fixture, toPath: path)
    try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path)
    let walker = FileManager.default.enumerator(atPath: path)!
    while let relative = walker.nextObject() as? String {
        let full = path + "/" + relative
        let isDirectory =
            try FileManager.default.attributesOfItem(atPath: full)[.type] as? FileAttributeType == .typeDirectory
        let mode = isDirectory ? 0o700 : (relative == "VAULT" ? 0o644 : 0o600)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: full)
    }
}
