import Foundation
import Testing
import VaultSystem
import VaultTestSupport

@testable import VaultStore

/// For every system call that a put makes, an injected failure of that call (and only that call)
/// either is harmless or gives an error that names the cause; the previous value stays readable, no
/// temp file stays behind, and the next put succeeds.
@Suite struct FaultInjectionTests {
    let group = try! GroupName("faults")

    func temporaryFiles(_ vault: TemporaryVault) throws -> [String] {
        let groupDir = "groups/\(group)"
        guard FileManager.default.fileExists(atPath: vault.file(groupDir)) else { return [] }
        return try vault.entries(groupDir).filter { $0.hasPrefix(".tmp") }
    }

    /// Counts the calls of each operation that one put makes on a fresh store.
    func callsOfOnePut(_ vault: TemporaryVault, _ id: ItemID) throws -> [SystemOperation: Int] {
        let plan = FaultPlan.counting()
        let store = try VaultStore.open(at: vault.path)
        try FaultInjection.withPlan(plan) { try store.put(Array("probe".utf8), group: group, id: id) }
        var counts: [SystemOperation: Int] = [:]
        for op in SystemOperation.allCases { counts[op] = plan.count(of: op) }
        return counts
    }

    @Test(arguments: [Errno.ioError, Errno.noSpace, Errno.fileTooLarge])
    func everyCallOfAReplacingPutFailsCleanly(errno: Errno) throws {
        try withTemporaryVault("store") { vault in
            let setup = try VaultStore.create(at: vault.path)
            let id = try setup.itemID(group: group, primaryKey: [1])
            try setup.put(Array("old".utf8), group: group, id: id)
            let counts = try callsOfOnePut(vault, id)
            #expect(counts[.write, default: 0] >= 1)
            #expect(counts[.fsync] == 2)  // the file, then the directory: no second round trip
            #expect(counts[.rename] == 1)
            var injected = 0
            for (op, count) in counts where count > 0 {
                for occurrence in 1...count {
                    try setup.put(Array("old".utf8), group: group, id: id)
                    let store = try VaultStore.open(at: vault.path)
                    let plan = FaultPlan(op, occurrence: occurrence, effect: .fail(errno))
                    var failure: StoreError?
                    do {
                        try FaultInjection.withPlan(plan) { try store.put(Array("new".utf8), group: group, id: id) }
                    } catch let error as StoreError {
                        failure = error
                    }
                    injected += plan.injectedCount
                    let value = try store.get(group: group, id: id)
                    let context = "\(op) #\(occurrence) failing with \(errno): \(String(describing: failure))"
                    if let failure {
                        #expect(failure.errno == errno, "\(context)")
                        #expect(failure.message.contains(vault.path), "\(context)")
                        if op == .fsync && occurrence == 2 {
                            // The directory fsync comes after the rename: the new value is in place but
                            // may not be durable, and the caller is told so.
                            #expect(value == Array("new".utf8), "\(context)")
                            #expect(failure.message.contains("fsync the directory"), "\(context)")
                        } else {
                            #expect(value == Array("old".utf8), "\(context)")
                        }
                    } else {
                        // A failure may be absorbed only where the put still fully happened (the value is
                        // checked below): listing and unlinking of stale temp files, the lock release, the
                        // lock's mark when unreadable (cleaned up as after a death; an unwritable one fails
                        // the put, naming the `.lock`), the tidy stamp at the release, opening or checking the spare (a temp file is written instead), the exchange (a
                        // rename instead), zeroing the old contents. Never an fsync: the put would not be
                        // durable.
                        #expect(
                            [.readDirectory, .unlink, .lock, .read, .open, .stat, .write, .close, .rename].contains(op),
                            "\(context) did not fail")
                        #expect(value == Array("new".utf8), "\(context)")
                    }
                    #expect(try temporaryFiles(vault).isEmpty, "\(context)")
                    // With the fault gone, the next put works.
                    try store.put(Array("after".utf8), group: group, id: id)
                    #expect(try store.get(group: group, id: id) == Array("after".utf8))
                }
            }
            #expect(injected > 5)
        }
    }

    @Test func everyCallOfAFirstPutIntoANewGroupFailsCleanly() throws {
        try withTemporaryVault("store") { vault in
            let setup = try VaultStore.create(at: vault.path)
            let id = try setup.itemID(group: group, primaryKey: [1])
            let plan = FaultPlan.counting()
            try FaultInjection.withPlan(plan) { try setup.put(Array("probe".utf8), group: group, id: id) }
            #expect(plan.count(of: .mkdir) == 1)
            for op in SystemOperation.allCases where plan.count(of: op) > 0 {
                for occurrence in 1...plan.count(of: op) {
                    try? FileManager.default.removeItem(atPath: vault.file("groups/\(group)"))
                    let store = try VaultStore.open(at: vault.path)
                    let fault = FaultPlan(op, occurrence: occurrence, effect: .fail(.ioError))
                    let failed =
                        (try? FaultInjection.withPlan(fault) { try store.put([7], group: group, id: id) }) == nil
                    if failed && !(op == .fsync && occurrence == plan.count(of: .fsync)) {
                        #expect(try store.get(group: group, id: id) == nil, "\(op) #\(occurrence)")
                    }
                    #expect(try temporaryFiles(vault).isEmpty, "\(op) #\(occurrence)")
                    try store.put([8], group: group, id: id)
                    #expect(try store.get(group: group, id: id) == [8])
                }
            }
        }
    }

    @Test func persistentFailuresKeepFailingAndLeaveNothing() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put(Array("old".utf8), group: group, id: id)
            for op in [SystemOperation.write, .fsync, .rename, .open] {
                let plan = FaultPlan(op, occurrence: 1, effect: .fail(.noSpace), persistent: true)
                for _ in 0..<3 {
                    #expect(throws: StoreError.self) {
                        try FaultInjection.withPlan(plan) { try store.put(Array("new".utf8), group: group, id: id) }
                    }
                }
                #expect(try store.get(group: group, id: id) == Array("old".utf8))
                #expect(try temporaryFiles(vault).isEmpty)
            }
            try store.put(Array("new".utf8), group: group, id: id)
            #expect(try store.get(group: group, id: id) == Array("new".utf8))
        }
    }

    @Test func shortWritesStillWriteEverything() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            let payload = (0..<10_000).map { UInt8(truncatingIfNeeded: $0) }
            let plan = FaultPlan(.write, occurrence: 1, effect: .shortWrite, persistent: true)
            try FaultInjection.withPlan(plan) { try store.put(payload, group: group, id: id) }
            #expect(plan.count(of: .write) > 3)
            #expect(try store.get(group: group, id: id) == payload)
        }
    }

    @Test func removeFailuresAreReported() throws {
        try withTemporaryVault("store") { vault in
            let store = try VaultStore.create(at: vault.path)
            let id = try store.itemID(group: group, primaryKey: [1])
            try store.put([1], group: group, id: id)
            let plan = FaultPlan(.unlink, occurrence: 1, effect: .fail(.ioError))
            let error = #expect(throws: StoreError.self) {
                try FaultInjection.withPlan(plan) { _ = try store.delete(group: group, id: id) }
            }
            #expect(error?.errno == .ioError)
            #expect(try store.get(group: group, id: id) == [1])
        }
    }

    @Test func initFailuresLeaveNoHalfVault() throws {
        let probe = FaultPlan.counting()
        try withTemporaryVault("store") { vault0 in
            _ = try FaultInjection.withPlan(probe) { try VaultStore.create(at: vault0.path) }
            for op in SystemOperation.allCases where probe.count(of: op) > 0 {
                for occurrence in 1...probe.count(of: op) {
                    try withTemporaryVault("store") { vault in
                        let plan = FaultPlan(op, occurrence: occurrence, effect: .fail(.ioError))
                        let created =
                            (try? FaultInjection.withPlan(plan) { try VaultStore.create(at: vault.path) }) != nil
                        if !created {
                            // Whatever the failed step, a second init finishes the job (or finds that the
                            // failure came after the vault was complete), and the vault opens.
                            do throws(StoreError) {
                                _ = try VaultStore.create(at: vault.path)
                            } catch {
                                #expect(error.code == .vaultAlreadyExists, "\(op) #\(occurrence): \(error)")
                            }
                        }
                        let store = try VaultStore.open(at: vault.path)
                        // A temp file can survive only a double fault (its removal failed too); the first
                        // writer removes it.
                        try store.put([1], group: group, id: try store.itemID(group: group, primaryKey: [1]))
                        #expect(try vault.entries("").filter { $0.hasPrefix(".tmp") }.isEmpty, "\(op) #\(occurrence)")
                    }
                }
            }
        }
    }
}
