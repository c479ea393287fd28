#if DEBUG
    import Synchronization

    /// The debug-only fault seam: a test installs a `FaultPlan` for the task it runs in, and every system
    /// call of this module made from that task asks the plan whether to fail. Task-local, so tests that run
    /// in parallel do not see each other's faults. Compiled out of release builds.
    package enum FaultInjection {
        @TaskLocal static var plan: FaultPlan?

        /// Runs `body` with `plan` deciding the fate of each system call made from this task.
        package static func withPlan<R>(_ plan: FaultPlan, _ body: () throws -> R) rethrows -> R {
            try $plan.withValue(plan) { try body() }
        }

        static func fault(for operation: SystemOperation) -> Errno? {
            if case .fail(let errno) = decision(for: operation) { return errno }
            return nil
        }

        static func decision(for operation: SystemOperation) -> FaultPlan.Decision {
            let decision = plan?.next(operation) ?? .proceed
            if case .interleave(let action) = decision {
                // Outside the plan's lock: the action's own calls go through the plan too.
                action()
                return .proceed
            }
            return decision
        }
    }

    /// What the seam does to a system call it matches.
    package enum FaultEffect: Sendable {
        /// The call fails with this error and has no effect.
        case fail(Errno)
        /// A write transfers fewer bytes than asked (as the kernel may), then the caller must loop.
        case shortWrite
        /// The action runs just before the call, which then proceeds: another writer acting at an exact
        /// point of this one's work (its calls go through the same plan).
        case interleave(@Sendable () -> Void)

    }

    /// A schedule of faults: fail the k-th call of an operation, once or from then on.
    package final class FaultPlan: Sendable {
        enum Decision {
            case proceed, fail(Errno), shortWrite
            case interleave(@Sendable () -> Void)
        }

        private struct State {
            var counts: [SystemOperation: Int] = [:]
            var injected = 0
        }

        private let operation: SystemOperation
        private let occurrence: Int
        private let persistent: Bool
        private let effect: FaultEffect
        private let state = Mutex(State())

        /// Fails (or cuts short) the `occurrence`-th call (1-based) of `operation`; with `persistent`,
        /// also every later call of it.
        package init(_ operation: SystemOperation, occurrence: Int, effect: FaultEffect, persistent: Bool = false) {
            self.operation = operation
            self.occurrence = occurrence
            self.effect = effect
            self.persistent = persistent
        }

        /// A plan that injects nothing and only counts calls.
        package static func counting() -> FaultPlan {
            FaultPlan(.open, occurrence: Int.max, effect: .fail(.ioError))
        }

        /// How many calls of `operation` went through the seam so far.
        package func count(of operation: SystemOperation) -> Int {
            state.withLock { $0.counts[operation, default: 0] }
        }

        /// How many faults were injected so far.
        package var injectedCount: Int { state.withLock { $0.injected } }

        func next(_ op: SystemOperation) -> Decision {
            state.withLock { state in
                let n = state.counts[op, default: 0] + 1
                state.counts[op] = n
                guard op == operation, n == occurrence || (persistent && n > occurrence) else { return .proceed }
                state.injected += 1
                switch effect {
                case .fail(let errno): return .fail(errno)
                case .shortWrite: return .shortWrite
                case .interleave(let action): return .interleave(action)
                }
            }
        }
    }
#endif
