import CVaultAPI
import FoundationEssentials
import Glibc
import Synchronization
import Testing
import Vault
import VaultTestSupport

@testable import VaultCAPI

/// The C API's Swift-side machinery, and its exports called from Swift on the same vault the Swift API
/// uses. (The C view of every function and error path is Tests/CAPI/test_vault.c, run by
/// scripts/test-c-api.)
@Suite struct VaultCAPITests {
    @Test func everyVaultStatusHasAHeaderConstantAndADescription() {
        let statuses: [VaultStatus] = [
            .success, .unimplemented, .io, .param, .permissionDenied, .allocate, .notAvailable, .noSuchVault,
            .duplicateVault, .duplicateItem, .itemNotFound, .noSuchAttribute, .noSuchClass,
            .interactionNotAllowed, .decode, .missingEntitlement,
        ]
        for status in statuses {
            let text = String(cString: vault_strerror(status.rawValue))
            #expect(text.hasPrefix(status.name + ":"), "\(status): \(text)")
        }
        #expect(String(cString: vault_strerror(1)) == "unknown status")
    }

    @Test func handlesAreNeverReusedAndKindsNeverCollide() throws {
        let table = HandleTable<String>(tag: 0x3, kind: "thing")
        let other = HandleTable<String>(tag: 0x4, kind: "other")
        let first = table.insert("a")
        #expect(try table.lookup(first, name: "h") == "a")
        _ = try table.remove(first, name: "h")
        let second = table.insert("b")
        #expect(first != second)
        #expect(throws: Failure.self) { try table.lookup(first, name: "h") }
        let foreign = other.insert("c")
        #expect(throws: Failure.self) { try table.lookup(foreign, name: "h") }
        #expect(throws: Failure.self) { try other.lookup(second, name: "h") }
        do {
            _ = try table.lookup(nil, name: "h")
        } catch {
            #expect(error.status == Status.param)
        }
        do {
            _ = try table.remove(first, name: "h")
        } catch {
            #expect(error.status == Status.invalidHandle)
            #expect(error.message.contains("thing"))
        }
    }

    @Test func lastErrorIsPerThread() {
        LastError.set("main")
        let seen = Seen()
        for index in 0..<4 {
            // A thread of its own, so that pthread-specific data is really per thread.
            let ran = PlainThread.run {
                seen.append(String(cString: LastError.current))
                LastError.set("thread \(index)")
                seen.append(String(cString: LastError.current))
            }
            #expect(ran)
        }
        #expect(seen.values == (0..<4).flatMap { ["", "thread \($0)"] })
        #expect(String(cString: LastError.current) == "main")
        LastError.set("")
        #expect(String(cString: LastError.current) == "")
    }

    @Test func datesBecomeMillisecondsSafely() {
        #expect(ItemSnapshot.milliseconds(nil) == 0)
        #expect(ItemSnapshot.milliseconds(Date(timeIntervalSince1970: 1.5)) == 1500)
        #expect(ItemSnapshot.milliseconds(Date(timeIntervalSince1970: -1.5)) == -1500)
        #expect(ItemSnapshot.milliseconds(Date(timeIntervalSince1970: 1e300)) == Int64.max)
        #expect(ItemSnapshot.milliseconds(Date(timeIntervalSince1970: -1e300)) == Int64.min)
        #expect(ItemSnapshot.milliseconds(Date(timeIntervalSince1970: .nan)) == 0)
    }

    @Test func exportsAndSwiftAPIShareOneVault() throws {
        try withTemporaryVault("capi") { temporary in
            let path = temporary.path
            var handle: OpaquePointer?
            #expect(vault_open(path, "app.swift", nil, 0, UInt32(VAULT_OPEN_CREATE), &handle) == Status.ok)
            defer { _ = vault_close(handle) }
            let secret = Array("from the C API".utf8)
            #expect(vault_put(handle, nil, "svc", "acct", secret, UInt64(secret.count)) == Status.ok)

            let vault = try Vault.open(at: path, client: try Client(applicationIdentifier: "app.swift"))
            #expect(try vault.data(for: try ItemKey(service: "svc", account: "acct")) == Data(secret))
            try vault.set(Data("from Swift".utf8), for: try ItemKey(service: "svc", account: "swift"))

            var buffer = [UInt8](repeating: 0, count: 32)
            var length: UInt64 = 0
            #expect(vault_get(handle, nil, "svc", "swift", &buffer, UInt64(buffer.count), &length) == Status.ok)
            #expect(Array(buffer[0..<Int(length)]) == Array("from Swift".utf8))
        }
    }
}

/// A plain pthread, joined before `run` returns.
enum PlainThread {
    final class Box: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    @discardableResult
    static func run(_ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(Box(body))
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { raw in
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, box.toOpaque())
        guard created == 0 else {
            box.release()
            return false
        }
        pthread_join(thread, nil)
        return true
    }
}

/// Strings collected from other threads.
final class Seen: Sendable {
    private let storage = Mutex<[String]>([])
    func append(_ value: String) { storage.withLock { $0.append(value) } }
    var values: [String] { storage.withLock { $0 } }
}
