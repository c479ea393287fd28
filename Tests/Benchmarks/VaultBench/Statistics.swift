import FoundationEssentials

/// Timings of one operation, in nanoseconds per op, and what they summarise to.
struct OperationTiming: Encodable {
    let operation: String
    let items: Int
    let samples: Int
    let medianNanoseconds: Double
    let p90Nanoseconds: Double
    let p99Nanoseconds: Double
    var opsPerSecond: Double { medianNanoseconds > 0 ? 1e9 / medianNanoseconds : 0 }
    var floor: String?
    var floorMedianNanoseconds: Double?
    var ratio: Double?

    init(operation: String, items: Int, nanoseconds: [Double]) {
        let sorted = nanoseconds.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            let index = min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded()))
            return sorted[index]
        }
        self.operation = operation
        self.items = items
        self.samples = sorted.count
        self.medianNanoseconds = percentile(0.5)
        self.p90Nanoseconds = percentile(0.9)
        self.p99Nanoseconds = percentile(0.99)
    }

    enum CodingKeys: String, CodingKey {
        case operation, items, samples, medianNanoseconds, p90Nanoseconds, p99Nanoseconds, opsPerSecond, floor
        case floorMedianNanoseconds, ratio
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(operation, forKey: .operation)
        try c.encode(items, forKey: .items)
        try c.encode(samples, forKey: .samples)
        try c.encode(medianNanoseconds, forKey: .medianNanoseconds)
        try c.encode(p90Nanoseconds, forKey: .p90Nanoseconds)
        try c.encode(p99Nanoseconds, forKey: .p99Nanoseconds)
        try c.encode(opsPerSecond, forKey: .opsPerSecond)
        try c.encodeIfPresent(floor, forKey: .floor)
        try c.encodeIfPresent(floorMedianNanoseconds, forKey: .floorMedianNanoseconds)
        try c.encodeIfPresent(ratio, forKey: .ratio)
    }
}

/// Runs `body` `iterations` times and returns the time of each run in nanoseconds.
func time(_ iterations: Int, _ body: (Int) throws -> Void) rethrows -> [Double] {
    var samples: [Double] = []
    samples.reserveCapacity(iterations)
    let clock = ContinuousClock()
    for i in 0..<iterations {
        let start = clock.now
        try body(i)
        let elapsed = clock.now - start
        samples.append(Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
    }
    return samples
}

/// "12.3 µs", "4.56 ms".
func formatDuration(_ nanoseconds: Double) -> String {
    if nanoseconds >= 1e9 { return String(format: "%.2f s", nanoseconds / 1e9) }
    if nanoseconds >= 1e6 { return String(format: "%.2f ms", nanoseconds / 1e6) }
    if nanoseconds >= 1e3 { return String(format: "%.1f µs", nanoseconds / 1e3) }
    return String(format: "%.0f ns", nanoseconds)
}

/// Runs `body` interleaved with `floorBody` (one floor run, one operation run, and so on), so that both
/// see the same machine, and returns the floor's timing and the operation's, with its ratio to the
/// floor.
func interleaved(
    _ name: String, floor floorName: String, items: Int, iterations: Int, _ floorBody: () throws -> Void,
    _ body: (Int) throws -> Void
) rethrows -> (floor: OperationTiming, operation: OperationTiming) {
    var floorSamples: [Double] = []
    var samples: [Double] = []
    for i in 0..<iterations {
        floorSamples += try time(1) { _ in try floorBody() }
        samples += try time(1) { _ in try body(i) }
    }
    let floor = OperationTiming(operation: floorName, items: items, nanoseconds: floorSamples)
    var operation = OperationTiming(operation: name, items: items, nanoseconds: samples)
    operation.floor = floorName
    operation.floorMedianNanoseconds = floor.medianNanoseconds
    operation.ratio = operation.medianNanoseconds / floor.medianNanoseconds
    return (floor, operation)
}

/// Runs each of `bodies` once per round for `rounds` rounds, each round starting one body further on
/// (so that no body always runs straight after the same other one), and returns the times of each body's
/// runs in nanoseconds, in the order of `bodies`.
func rotated(rounds: Int, _ bodies: [() throws -> Void]) throws -> [[Double]] {
    var samples = [[Double]](repeating: [], count: bodies.count)
    for round in 0..<rounds {
        for step in 0..<bodies.count {
            let index = (round + step) % bodies.count
            samples[index] += try time(1) { _ in try bodies[index]() }
        }
    }
    return samples
}
