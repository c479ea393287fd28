import VaultSystem

/// The system calls that `body` makes, by operation, counted through the fault seam (debug builds).
package func systemCalls<R>(of body: () throws -> R) rethrows -> (result: R, calls: [SystemOperation: Int]) {
    let plan = FaultPlan.counting()
    let result = try FaultInjection.withPlan(plan, body)
    var calls: [SystemOperation: Int] = [:]
    for operation in SystemOperation.allCases { calls[operation] = plan.count(of: operation) }
    return (result, calls)
}

/// The occurrences of a system call made `count` times that a fault test fails in turn: every one up
/// to 30, a sample of about 15 beyond.
package func sampledOccurrences(_ count: Int) -> [Int] {
    count <= 30 ? Array(1...count) : stride(from: 1, through: count, by: count / 15).map { $0 }
}
