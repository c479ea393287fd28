/// A moment as ISO 8601 in UTC to the second, `2026-12-01T21:05:03Z`: what
/// `Date.ISO8601FormatStyle()` prints, without it. Making that format style resolves its generic
/// types at run time, which scans every protocol conformance in the binary: half of a `vault ls`.
package enum UTCTimestamp {
    /// `seconds` since 1970-01-01T00:00:00Z, rounded down to the second; nil when it is not finite or
    /// falls outside the years 1583 to 9999: Foundation prints later years with more digits, and
    /// earlier dates in the Julian calendar (its Gregorian calendar starts on 1582-10-15), where this
    /// would print the proleptic Gregorian date.
    package static func iso8601(secondsSince1970 seconds: Double) -> String? {
        // 1583-01-01 is 12,212,553,600 s before 1970, 10000-01-01 253,402,300,800 s after it.
        guard seconds.isFinite, seconds >= -12_212_553_600, seconds < 253_402_300_800 else { return nil }
        return iso8601(wholeSeconds: Int64(seconds.rounded(.down)))
    }

    /// `nanoseconds` since 1970-01-01T00:00:00Z, rounded down to the second (an `Int64` of nanoseconds
    /// spans the years 1677 to 2262, always in range).
    package static func iso8601(nanosecondsSince1970 nanoseconds: Int64) -> String {
        let (quotient, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        return iso8601(wholeSeconds: remainder < 0 ? quotient - 1 : quotient)
    }

    private static func iso8601(wholeSeconds: Int64) -> String {
        let secondOfDay = ((wholeSeconds % 86_400) + 86_400) % 86_400
        let days = (wholeSeconds - secondOfDay) / 86_400
        let (year, month, day) = civilDate(daysSince1970: days)
        // The digits go into their places in one buffer: appended to a String one scalar at a time they
        // cost a `vault ls` 9,000 instructions a date.
        var text: [UInt8] = Array("0000-00-00T00:00:00Z".utf8)
        put(year, digits: 4, endingAt: 4, in: &text)
        put(month, digits: 2, endingAt: 7, in: &text)
        put(day, digits: 2, endingAt: 10, in: &text)
        put(secondOfDay / 3600, digits: 2, endingAt: 13, in: &text)
        put(secondOfDay / 60 % 60, digits: 2, endingAt: 16, in: &text)
        put(secondOfDay % 60, digits: 2, endingAt: 19, in: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// The proleptic Gregorian date of a day count, in eras of 400 years (146,097 days) that start on
    /// 1 March, so that the leap day ends a year (H. Hinnant, "chrono-Compatible Low-Level Date
    /// Algorithms", civil_from_days: https://howardhinnant.github.io/date_algorithms.html).
    static func civilDate(daysSince1970: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = daysSince1970 + 719_468  // days from 0000-03-01 to 1970-01-01
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Writes the last `digits` decimal digits of `value` (not negative) into `text` before `end`.
    private static func put(_ value: Int64, digits: Int, endingAt end: Int, in text: inout [UInt8]) {
        var rest = value
        for index in stride(from: end - 1, through: end - digits, by: -1) {
            text[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
    }
}
