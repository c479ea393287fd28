import FoundationEssentials
import Testing

@testable import VaultSystem

@Suite struct UTCTimestampTests {
    /// Known instants (2009-02-13T23:31:30Z is Unix time 1,234,567,890), leap days, the turns of
    /// centuries that are and are not leap years, and the ends of the range.
    @Test(
        arguments: [
            (0, "1970-01-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (1_234_567_890, "2009-02-13T23:31:30Z"),
            (951_782_400, "2000-02-29T00:00:00Z"),
            (4_107_542_399, "2100-02-28T23:59:59Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"),
            (-12_212_553_600, "1583-01-01T00:00:00Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
        ] as [(Int64, String)])
    func knownInstants(seconds: Int64, expected: String) {
        #expect(UTCTimestamp.iso8601(secondsSince1970: Double(seconds)) == expected)
        let (nanoseconds, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if !overflow { #expect(UTCTimestamp.iso8601(nanosecondsSince1970: nanoseconds) == expected) }
    }

    @Test func roundsDownToTheSecond() {
        #expect(UTCTimestamp.iso8601(secondsSince1970: 1.9) == "1970-01-01T00:00:01Z")
        #expect(UTCTimestamp.iso8601(secondsSince1970: -0.5) == "1969-12-31T23:59:59Z")
        #expect(UTCTimestamp.iso8601(nanosecondsSince1970: 1_999_999_999) == "1970-01-01T00:00:01Z")
        #expect(UTCTimestamp.iso8601(nanosecondsSince1970: -1) == "1969-12-31T23:59:59Z")
        #expect(UTCTimestamp.iso8601(nanosecondsSince1970: Int64.min) == "1677-09-21T00:12:43Z")
        #expect(UTCTimestamp.iso8601(nanosecondsSince1970: Int64.max) == "2262-04-11T23:47:16Z")
    }

    /// Outside the years that the fast form prints as Foundation does, the caller falls back to it.
    @Test func outsideItsYearsItGivesNothing() {
        for seconds in [-12_212_553_601, 253_402_300_800, .infinity, -.infinity, .nan] as [Double] {
            #expect(UTCTimestamp.iso8601(secondsSince1970: seconds) == nil, "\(seconds)")
        }
    }

    /// The same text as `Date.ISO8601FormatStyle()` over its whole range, fractions included.
    @Test func agreesWithFoundation() {
        var generator = SystemRandomNumberGenerator()
        var samples: [Double] = [-12_212_553_600, 253_402_300_799.999]
        for _ in 0..<20_000 {
            samples.append(Double.random(in: -12_212_553_600..<253_402_300_800, using: &generator))
        }
        for _ in 0..<5_000 { samples.append(Double.random(in: -1e6..<1e6, using: &generator)) }
        for seconds in samples {
            let date = Date(timeIntervalSince1970: seconds)
            let expected = date.formatted(Date.ISO8601FormatStyle())
            #expect(UTCTimestamp.iso8601(secondsSince1970: seconds) == expected, "\(seconds)")
        }
    }
}
