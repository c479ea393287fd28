import Foundation
import Testing
import VaultSystem
import VaultTestSupport

@testable import Vault

/// A vault in a fresh temp directory, opened as `client`.
struct TestVault {
    let root: String
    let path: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("vault-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        path = root + "/vault"
    }

    func open(_ client: Client) throws -> Vault {
        try Vault.open(at: path, client: client, createIfMissing: true)
    }

    func open(app: String = "com.example.app", groups: [String] = []) throws -> Vault {
        try open(try Client(applicationIdentifier: app, accessGroups: groups))
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }
}

extension Data {
    init(_ text: String) { self = Data(text.utf8) }
}

func genp(_ service: String?, _ account: String?, group: String? = nil) -> ItemAttributes {
    var a = ItemAttributes(service: service, account: account)
    a.accessGroup = group.map { try! AccessGroup($0) }
    return a
}

func status(_ body: () throws -> Void) -> VaultStatus {
    do {
        try body()
        return .success
    } catch let error as VaultError {
        return error.status
    } catch {
        Issue.record("unexpected error \(error)")
        return VaultStatus(rawValue: 1)
    }
}

/// Counts the files a block opens, through the VaultSystem seam (debug builds).
final class FileOpenCounter: @unchecked Sendable {
    var opens = 0

    func counting<R>(_ body: () throws -> R) rethrows -> R {
        let plan = FaultPlan.counting()
        let result = try FaultInjection.withPlan(plan, body)
        opens = plan.count(of: .open)
        return result
    }
}

/// Runs the `vault-test-helper` executable (built next to the test bundle) and returns its exit
/// status and standard output.
func runHelper(_ arguments: [String]) throws -> Process {
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let process = Process()
    process.executableURL = directory.appendingPathComponent("vault-test-helper")
    process.arguments = arguments
    process.standardOutput = Pipe()
    process.standardError = Pipe()
    try process.run()
    return process
}

extension Process {
    /// Waits for the process and returns its exit status, stdout and stderr.
    func finish() -> (status: Int32, output: String, errors: String) {
        let out = (standardOutput as! Pipe).fileHandleForReading.readDataToEndOfFile()
        let err = (standardError as! Pipe).fileHandleForReading.readDataToEndOfFile()
        waitUntilExit()
        return (terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}
