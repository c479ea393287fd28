import Foundation
import Testing
import Vault
import VaultTestSupport

#if canImport(Glibc)
    import Glibc
#endif

/// Many processes on one vault: atomic read-modify-write loses no update, distinct adds lose no item,
/// and a lock holder that dies does not stall the others (OFD locks die with their process).
@Suite(.serialized) struct ConcurrencyTests {
    static let processes = 8

    /// Runs `processes` helpers at once on a new vault in `dir`, helper `i` with `arguments(path, i)`,
    /// and waits for all of them; the vault and the seconds they took.
    func runAtOnce(in dir: TemporaryDirectory, _ arguments: (String, Int) -> [String]) throws -> (Vault, Double) {
        let path = dir.file("vault")
        let vault = try Vault.create(at: path, client: try testClient())
        let started = monotonicMilliseconds()
        let children = try (0..<Self.processes).map { try Helper(arguments(path, $0)) }
        for child in children {
            let result = child.finish()
            #expect(result.status == 0, "\(result.errors)")
        }
        return (vault, (monotonicMilliseconds() - started) / 1000)
    }

    @Test func eightProcessesIncrementingOneCounter() throws {
        try withTemporaryDirectory("increment") { dir in
            let perProcess = Sizes.operationsPerProcess
            let (vault, seconds) = try runAtOnce(in: dir) { path, _ in
                ["increment", path, testApp, String(perProcess)]
            }
            let value = try vault.string(for: try ItemKey(service: "counter", account: "value"))
            #expect(value == String(Self.processes * perProcess))
            figure(
                "increments",
                "\(Self.processes) processes x \(perProcess) Vault.modify increments = \(value ?? "nil") "
                    + "(expected \(Self.processes * perProcess)), " + String(format: "%.1f s", seconds))
        }
    }

    @Test func eightProcessesAddingDistinctItems() throws {
        try withTemporaryDirectory("adds") { dir in
            let path = dir.file("vault")
            let perProcess = Sizes.operationsPerProcess
            let (vault, seconds) = try runAtOnce(in: dir) { path, i in
                ["add", path, testApp, String(perProcess), "w\(i)"]
            }
            let items = try vault.copyMatching(
                Query(
                    itemClass: .genericPassword, attributes: ItemAttributes(service: "distinct", account: nil),
                    limit: .all)
            )
            #expect(items.count == Self.processes * perProcess)
            let decrypted = try decryptEveryItem(path)
            #expect(decrypted.failures.isEmpty)
            figure(
                "adds",
                "\(Self.processes) processes x \(perProcess) distinct adds = \(items.count) items "
                    + "(expected \(Self.processes * perProcess)), " + String(format: "%.1f s", seconds))
        }
    }

    /// A helper takes the write lock and sleeps; 4 incrementers queue behind it; the holder is
    /// SIGKILLed, and the others must all finish within 5 s of the kill.
    @Test func killingTheLockHolderLetsTheOthersProceed() throws {
        try withTemporaryDirectory("lockholder") { dir in
            let path = dir.path + "/vault"
            let vault = try Vault.create(at: path, client: try testClient())
            let holder = try Helper(["hold-lock", path, testApp])
            let seen = holder.waitFor("locked")
            #expect(seen.contains("locked"), "\(seen)")
            let waiters = try (0..<4).map { _ in try Helper(["increment", path, testApp, "20"]) }
            usleep(300_000)
            // They are blocked on the lock: the counter has not moved.
            #expect(try vault.string(for: try ItemKey(service: "counter", account: "value")) == nil)
            for waiter in waiters { #expect(waiter.process.isRunning) }
            let killed = monotonicMilliseconds()
            holder.kill()
            _ = holder.finish()
            var slowest = 0.0
            for waiter in waiters {
                let result = waiter.finish()
                slowest = max(slowest, monotonicMilliseconds() - killed)
                #expect(result.status == 0, "\(result.errors)")
            }
            #expect(slowest < 5000)
            #expect(try vault.string(for: try ItemKey(service: "counter", account: "value")) == "80")
            figure(
                "lock-holder-kill",
                "lock holder SIGKILLed with 4 processes waiting: all 4 x 20 increments done "
                    + String(format: "%.0f ms", slowest) + " after the kill (limit 5000 ms)")
        }
    }
}
