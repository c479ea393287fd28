import VaultSystem

/// The system calls that `body` makes, by operation, counted through the fault seam (debug builds).
public func systemCalls<R>(of body: () throws -> R) rethrows -> (result: R, calls: [SystemOperation: Int]) {
    let plan = FaultPlan.counting()
    let result = try FaultInjection.withPlan(plan, body)
    var calls: [SystemOperation: Int] = [:]
    for operation in SystemOperation.allCases { calls[operation] = plan.count(of: operation) }
    return (result, calls)
}
