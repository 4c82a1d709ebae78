import Foundation

/// RFC 3339's `date-time` (section 5.6), as JSON Schema's `date-time` format takes it: `2026-11-28T14:05:00Z`,
/// `T` and `Z` in either case, fractional seconds of any length, an offset `±hh:mm` of up to 23:59, and a leap second
/// (`:60`, read as the last instant of its minute). The one reader of the API's query times.
package enum RFC3339 {
    package static func date(_ text: String) -> Date? {
        let b = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= b.count else { return nil }
            var value = 0
            for byte in b[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard b.count >= 20, let year = number(0..<4), b[4] == 0x2D, let month = number(5..<7), b[7] == 0x2D, let day = number(8..<10),
              b[10] == 0x54 || b[10] == 0x74, let hour = number(11..<13), b[13] == 0x3A, let minute = number(14..<16), b[16] == 0x3A,
              let second = number(17..<19) else { return nil }
        var index = 19
        var fraction = 0.0
        if index < b.count, b[index] == 0x2E {
            var scale = 0.1
            index += 1
            let start = index
            while index < b.count, (0x30...0x39).contains(b[index]) {
                fraction += Double(b[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < b.count else { return nil }
        var offset = 0
        if b[index] == 0x5A || b[index] == 0x7A {
            guard index + 1 == b.count else { return nil }
        } else {
            guard b[index] == 0x2B || b[index] == 0x2D, index + 6 == b.count, let hours = number(index + 1..<index + 3), b[index + 3] == 0x3A,
                  let minutes = number(index + 4..<index + 6), hours <= 23, minutes <= 59 else { return nil }
            offset = (hours * 60 + minutes) * 60 * (b[index] == 0x2D ? -1 : 1)
        }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), (1...days[month - 1]).contains(day), hour <= 23, minute <= 59, second <= 60 else { return nil }
        // Days since 1970-01-01 (Howard Hinnant's days_from_civil).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let epochDays = era * 146_097 + doe - 719_468
        let seconds = Double(epochDays * 86_400 + hour * 3_600 + minute * 60 + min(second, 59) - offset)
            + (second == 60 ? 0.999 : fraction)
        return Date(timeIntervalSince1970: seconds)
    }
}
