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
    /// Whether a row is to be measured (`--rows`).
    let selected: (String) -> Bool

    init(
        directory: String, items: Int, quick: Bool, progress: Progress,
        selected: @escaping (String) -> Bool = { _ in true }
    ) throws {
        self.directory = directory
        self.selected = selected
        self.items = items
        self.quick = quick
        self.progress = progress
        vault = try Vault.create(
            at: FilePath(directory).appending("vault").string, client: try Client(applicationIdentifier: "bench"))
        progress.show("filling \(items) items…")
        try vault.withBulkLoad { () throws(VaultError) in
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
        let groupDirectory = vault.path(of: try AccessGroup("bench"))
        let sampleFile = try FileManager.default.contentsOfDirectory(atPath: groupDirectory).first {
            $0.hasSuffix(".item")
        }!
        let fileSize =
            try FileManager.default.attributesOfItem(atPath: (FilePath(groupDirectory) / sampleFile).string)[.size]
            as! Int
        let floors = try Floors(directory: directory, fileSize: fileSize)
        // The bulk fill's writeback and journal commits can still be running: let a few durable writes
        // settle the disk before anything is timed.
        for i in 0..<(quick ? 2 : 30) { try floors.durableWrite(i) }
        let recorder = Recorder(items: items, progress: progress, selected: selected)

        let write = Floors.writeName
        let read = Floors.readName
        let scan = "floor: read + open all files"
        let account = "item-\(items / 2)"
        let get = Query.genericPassword(service: "bench", account: account)
        try recorder.record("get by primary key (data)", iterations: readIterations, floor: read, floors.readAndOpen) {
            _ in
            _ = try vault.copyMatching(get, returning: .data)
        }
        try recorder.record("get attributes", iterations: readIterations, floor: read, floors.readAndOpen) { _ in
            _ = try vault.copyMatching(get, returning: .attributes)
        }
        var floorRun = 0
        let durableWrite = {
            floorRun += 1
            try floors.durableWrite(floorRun)
        }
        try recorder.record("add (durable)", iterations: writeIterations, floor: write, durableWrite) { i in
            try vault.add(
                .genericPassword, attributes: ItemAttributes(service: "added", account: "a\(i)"), data: secret)
        }
        try recorder.record("update (durable)", iterations: writeIterations, floor: write, durableWrite) { i in
            try vault.update(get, with: ItemChanges(data: Data("value-\(i)".utf8)))
        }
        try recorder.record("delete (durable)", iterations: writeIterations, floor: write, durableWrite) { i in
            try vault.delete(.genericPassword(service: "added", account: "a\(i)"))
        }
        // What history costs: an update that keeps the replaced version (this vault keeps the default
        // number, and its item has that many by now) next to the same update in a vault of the same
        // size that keeps none, interleaved.
        if selected("update with history") {
            let withoutHistory = try copyWithoutHistory()
            for i in 0..<(vault.versionsKept + 1) {
                try vault.update(get, with: ItemChanges(data: Data("warm-\(i)".utf8)))
            }
            try recorder.record(
                "update with history (\(vault.versionsKept) versions kept)", iterations: writeIterations,
                floor: "update without history (0 versions kept)",
                { try withoutHistory.update(get, with: ItemChanges(data: Data("plain".utf8))) }
            ) { i in
                try vault.update(get, with: ItemChanges(data: Data("value-\(i)".utf8)))
            }
        }
        try recorder.record("device identifier (existing)", iterations: readIterations, floor: read, floors.readAndOpen)
        { _ in
            _ = try vault.deviceIdentifier()
        }
        let query = Query.genericPassword(service: "bench", limit: .all)
        try recorder.record(
            "query by service (all items)", iterations: scanIterations, floor: scan,
            {
                try floors.readAndOpenAll(in: groupDirectory)
            }
        ) { _ in
            _ = try vault.copyMatching(query, returning: .attributes)
        }
        var results = recorder.results
        guard selected("open vault (cold, in-process)") else { return results }
        results.append(
            OperationTiming(
                operation: "open vault (cold, in-process)", items: items,
                nanoseconds: try time(quick ? 20 : 500) { _ in
                    _ = try Vault.open(
                        at: FilePath(directory).appending("vault").string,
                        client: try Client(applicationIdentifier: "bench"))
                }))
        return results
    }

    /// A vault of the same size as this one that keeps no history.
    func copyWithoutHistory() throws -> Vault {
        let copy = try Vault.create(
            at: FilePath(directory).appending("vault-no-history").string,
            client: try Client(applicationIdentifier: "bench"))
        try copy.setVersionsKept(0)
        progress.show("filling \(items) items without history…")
        try copy.withBulkLoad { () throws(VaultError) in
            for i in 0..<items {
                try copy.add(
                    .genericPassword, attributes: ItemAttributes(service: "bench", account: "item-\(i)"), data: secret)
            }
        }
        return try Vault.open(
            at: FilePath(directory).appending("vault-no-history").string,
            client: try Client(applicationIdentifier: "bench"))
    }

    /// Peak RSS of separate processes that open this vault and read from it (`MemoryBench`).
    func memory() throws -> [MemoryBench.Row] {
        guard items >= 10_000 || quick else { return [] }
        return try MemoryBench.rows(
            vaultPath: FilePath(directory).appending("vault").string, items: items, selected: selected)
    }
}

/// Timings in the order they were measured, each floor before the first operation measured against it.
final class Recorder {
    let items: Int
    let progress: Progress
    let selected: (String) -> Bool
    private(set) var results: [OperationTiming] = []

    init(items: Int, progress: Progress, selected: @escaping (String) -> Bool = { _ in true }) {
        self.items = items
        self.progress = progress
        self.selected = selected
    }

    /// Measures `body` interleaved with `floorBody` (one floor run, one operation run, and so on), so
    /// that both see the same machine: on a shared machine fsync latency drifts by the second, and a
    /// floor measured minutes apart would make the ratio measure the drift.
    func record(
        _ name: String, iterations: Int, floor floorName: String, _ floorBody: () throws -> Void,
        _ body: (Int) throws -> Void
    ) throws {
        guard selected(name) else { return }
        let (floor, m) = try interleaved(name, floor: floorName, items: items, iterations: iterations, floorBody, body)
        if !results.contains(where: { $0.operation == floorName }) { results.append(floor) }
        results.append(m)
        progress.show("\(name) at \(items) items: \(formatDuration(m.medianNanoseconds))")
    }

    /// A row measured without a floor.
    func add(_ timing: OperationTiming) {
        results.append(timing)
    }
}

/// The same system calls and libsodium calls as the vault, without the vault. The AEAD open goes into
/// an ordinary buffer (as the vault's reads do), so that the floor is the cheapest way to do the work.
struct Floors {
    static let writeName = "floor: durable write"
    static let readName = "floor: read + AEAD open"

    let directory: FileDescriptor
    let path: String
    let contents: [UInt8]
    let key: SymmetricKey
    let nonce: [UInt8]
    let sealed: [UInt8]

    init(directory path: String, fileSize: Int) throws {
        self.path = FilePath(path).appending("floor").string
        try FileManager.default.createDirectory(atPath: self.path, withIntermediateDirectories: true)
        directory = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(self.path)
        contents = [UInt8](repeating: 7, count: fileSize)
        let key = try SymmetricKey.random()
        let nonce = try XChaCha20Poly1305.randomNonce()
        let plaintextCount = max(0, fileSize - 8 - 24 - 16)
        sealed = try XChaCha20Poly1305.seal(
            [UInt8](repeating: 1, count: plaintextCount), key: key, nonce: nonce,
            associatedData: [UInt8](repeating: 2, count: 120))
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
        _ = try XChaCha20Poly1305.open(
            sealed, from: 0, key: key, nonce: nonce, associatedData: [UInt8](repeating: 2, count: 120),
            as: TransientBytes.self)
    }

    func readAndOpenAll(in groupPath: String) throws {
        let group = try FileDescriptor.currentWorkingDirectory.openDirectoryAt(groupPath)
        defer { try? group.close() }
        for name in try group.entryNames() where name.hasSuffix(".item") {
            let fd = try group.openAt(name, .readOnly)
            _ = try fd.readAll(limit: 1 << 20)
            try fd.close()
            _ = try XChaCha20Poly1305.open(
                sealed, from: 0, key: key, nonce: nonce, associatedData: [UInt8](repeating: 2, count: 120),
                as: TransientBytes.self)
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
