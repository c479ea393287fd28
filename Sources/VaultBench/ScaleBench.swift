import Foundation
import Vault
import VaultCrypto
import VaultSystem

/// The in-process operations at one vault size, each next to its floor.
struct ScaleBench {
    let directory: String
    let items: Int
    let quick: Bool
    let progress: Progress
    let vault: Vault
    let secret = Data(repeating: 0x5a, count: 32)

    init(directory: String, items: Int, quick: Bool, progress: Progress) throws {
        self.directory = directory
        self.items = items
        self.quick = quick
        self.progress = progress
        vault = try Vault.create(at: directory + "/vault", client: try Client(applicationIdentifier: "bench"))
        progress.show("filling \(items) items…")
        try vault.withBulkLoad {
            for i in 0..<items {
                try vault.add(
                    .genericPassword, attributes: ItemAttributes(service: "bench", account: "item-\(i)"), data: secret)
                if i % 1000 == 0 { progress.show("filling \(items) items… \(i)") }
            }
        }
        _ = try vault.deviceIdentifier()
    }

    var writeIterations: Int { quick ? 10 : 100 }
    var readIterations: Int { quick ? 100 : 3000 }
    var scanIterations: Int { quick ? 2 : (items >= 10_000 ? 5 : 20) }

    func run() throws -> [OperationTiming] {
        let groupDirectory = directory + "/vault/groups/bench"
        let sampleFile = try FileManager.default.contentsOfDirectory(atPath: groupDirectory).first {
            $0.hasSuffix(".item")
        }!
        let fileSize =
            try FileManager.default.attributesOfItem(atPath: groupDirectory + "/" + sampleFile)[.size] as! Int
        var results: [OperationTiming] = []
        func record(_ name: String, _ samples: [Double], floor: OperationTiming? = nil) {
            var m = OperationTiming(operation: name, items: items, nanoseconds: samples)
            if let floor {
                m.floor = floor.operation
                m.ratio = m.medianNanoseconds / floor.medianNanoseconds
            }
            results.append(m)
            progress.show("\(name) at \(items) items: \(formatDuration(m.medianNanoseconds))")
        }

        // Floors, on the same directory.
        let floors = try Floors(directory: directory, fileSize: fileSize)
        let writeFloor = OperationTiming(
            operation: "floor: durable write", items: items,
            nanoseconds: try time(writeIterations) { i in
                try floors.durableWrite(i)
            })
        results.append(writeFloor)
        let readFloor = OperationTiming(
            operation: "floor: read + AEAD open", items: items,
            nanoseconds: try time(readIterations) { _ in
                try floors.readAndOpen()
            })
        results.append(readFloor)
        let scanFloor = OperationTiming(
            operation: "floor: read + open all files", items: items,
            nanoseconds: try time(scanIterations) { _ in
                try floors.readAndOpenAll(in: groupDirectory)
            })
        results.append(scanFloor)

        // The vault.
        let account = "item-\(items / 2)"
        let get = Query.genericPassword(service: "bench", account: account)
        record(
            "get by primary key (data)",
            try time(readIterations) { _ in
                _ = try vault.copyMatching(get, returning: .data)
            }, floor: readFloor)
        record(
            "get attributes",
            try time(readIterations) { _ in
                _ = try vault.copyMatching(get, returning: .attributes)
            }, floor: readFloor)
        record(
            "add (durable)",
            try time(writeIterations) { i in
                try vault.add(
                    .genericPassword, attributes: ItemAttributes(service: "added", account: "a\(i)"), data: secret)
            }, floor: writeFloor)
        record(
            "update (durable)",
            try time(writeIterations) { i in
                try vault.update(get, with: ItemChanges(data: Data("value-\(i)".utf8)))
            }, floor: writeFloor)
        record(
            "delete (durable)",
            try time(writeIterations) { i in
                try vault.delete(.genericPassword(service: "added", account: "a\(i)"))
            }, floor: writeFloor)
        record(
            "device identifier (existing)",
            try time(readIterations) { _ in
                _ = try vault.deviceIdentifier()
            }, floor: readFloor)
        let query = Query.genericPassword(service: "bench", limit: .all)
        record(
            "query by service (all items)",
            try time(scanIterations) { _ in
                _ = try vault.copyMatching(query, returning: .attributes)
            }, floor: scanFloor)
        record(
            "open vault (cold, in-process)",
            try time(quick ? 20 : 500) { _ in
                _ = try Vault.open(at: directory + "/vault", client: try Client(applicationIdentifier: "bench"))
            })
        return results
    }

    /// Peak RSS of a separate process that opens this vault and queries every item.
    func memory() throws -> [String: Int] {
        guard items >= 10_000 || quick else { return [:] }
        let output = try Shell.capture(CommandLine.arguments[0], ["--hold-vault", directory + "/vault"])
        return [
            "process holding an open vault of \(items) items": Int(
                output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        ]
    }
}

/// The same system calls and libsodium calls as the vault, without the vault.
struct Floors {
    let directory: FileDescriptor
    let path: String
    let contents: [UInt8]
    let key: SecureBytes
    let nonce: [UInt8]
    let sealed: [UInt8]

    init(directory path: String, fileSize: Int) throws {
        self.path = path + "/floor"
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
        directory = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(self.path)
        contents = [UInt8](repeating: 7, count: fileSize)
        let key = try SecureBytes.random(count: 32)
        let nonce = try XChaCha20Poly1305.randomNonce()
        let plaintextCount = max(0, fileSize - 8 - 24 - 16)
        sealed = try [UInt8](repeating: 1, count: plaintextCount).withUnsafeBytes {
            try XChaCha20Poly1305.seal($0, key: key, nonce: nonce, associatedData: [UInt8](repeating: 2, count: 120))
        }
        self.key = key
        self.nonce = nonce
        try durableWrite(0)
    }

    func durableWrite(_ i: Int) throws {
        let fd = try directory.openAt(".tmp", [.writeOnly, .create, .exclusiveCreate])
        try fd.writeAll(contents)
        try fd.sync()
        try fd.close()
        try directory.renameAt(".tmp", to: "file")
        try directory.sync()
    }

    func readAndOpen() throws {
        let fd = try directory.openAt("file", .readOnly)
        _ = try fd.status()
        _ = try fd.readAll(limit: 1 << 20)
        try fd.close()
        _ = try sealed.withUnsafeBytes {
            try XChaCha20Poly1305.open($0, key: key, nonce: nonce, associatedData: [UInt8](repeating: 2, count: 120))
        }
    }

    func readAndOpenAll(in groupPath: String) throws {
        let group = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(groupPath)
        defer { try? group.close() }
        for name in try group.entryNames() where name.hasSuffix(".item") {
            let fd = try group.openAt(name, .readOnly)
            _ = try fd.readAll(limit: 1 << 20)
            try fd.close()
            _ = try sealed.withUnsafeBytes {
                try XChaCha20Poly1305.open(
                    $0, key: key, nonce: nonce, associatedData: [UInt8](repeating: 2, count: 120))
            }
        }
    }
}

enum Shell {
    static func capture(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
