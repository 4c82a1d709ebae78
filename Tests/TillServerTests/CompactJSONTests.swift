import Foundation
import Testing
import Till
import TillOrchestration
@testable import TillServer
@testable import TillService

/// The stores encode every change's payment and decode stored intents with ``CompactJSON``; these hold it to Foundation's
/// coders on values drawn at random, with the characters JSON escapes and the ones it does not.
@Suite("CompactJSON: the same bytes as Foundation, in less time")
struct CompactJSONTests {
    /// A small deterministic generator (SplitMix64), so a failure names its seed and repeats.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Text with what JSON escapes (quotes, backslashes, every control character), what Foundation leaves alone (slashes,
    /// DEL, U+2028), and non-ASCII (accents, CJK, emoji, a combining mark).
    static func text(_ g: inout Generator, maxLength: Int = 12) -> String {
        let pieces: [String] = ["a", "Z", "0", "9", " ", "\"", "\\", "/", "\u{7F}", "\u{2028}", "é", "e\u{301}", "中", "😀", "<", "&", "'",
                                "\n", "\r", "\t", "\u{08}", "\u{0C}", "\u{00}", "\u{01}", "\u{1F}", "-", "_", ".", "%", "+"]
        return String((0..<Int.random(in: 0...maxLength, using: &g)).map { _ in pieces.randomElement(using: &g)! }.joined())
    }

    static func date(_ g: inout Generator) -> Date {
        // Milliseconds (what the stores keep) across 1900–2200, both sides of the epoch, with and without a fraction.
        Date(timeIntervalSince1970: Double(Int64.random(in: -2_208_988_800_000...7_258_118_400_000, using: &g)) / 1_000)
    }

    static func maybe<T>(_ g: inout Generator, _ make: (inout Generator) -> T) -> T? {
        Bool.random(using: &g) ? make(&g) : nil
    }

    static func payment(_ g: inout Generator) -> StoredPayment {
        let usd = Currency.lookup(["USD", "JPY", "KWD", "EUR"].randomElement(using: &g)!)!
        var metadata: [String: String] = [:]
        for _ in 0..<Int.random(in: 0...6, using: &g) { metadata[text(&g, maxLength: 6)] = text(&g) }
        let intent = PaymentIntent(merchantReference: text(&g), amount: Money(minorUnits: Int64.random(in: 0...10_000_000, using: &g), currency: usd),
                                   method: ["card", "wechatpay", "alipay", "upi"].randomElement(using: &g).map(PaymentMethod.init(rawValue:))!,
                                   customer: Customer(reference: maybe(&g) { text(&$0) }, email: maybe(&g) { text(&$0) },
                                                      firstName: maybe(&g) { text(&$0) }, lastName: maybe(&g) { text(&$0) },
                                                      phone: maybe(&g) { text(&$0) }, ipAddress: maybe(&g) { _ in "203.0.113.7" },
                                                      locale: maybe(&g) { _ in "ar-SA" }),
                                   description: maybe(&g) { text(&$0) }, metadata: metadata)
        let id = "pay_\(g.next())"
        let statuses = PaymentStatus.known
        let attempts = (0..<Int.random(in: 0...3, using: &g)).map { sequence in
            StoredAttempt(reference: AttemptReference.generate(), paymentID: id, sequence: sequence + 1,
                          gateway: GatewayID(rawValue: ["citcon", "payfort", "fake"].randomElement(using: &g)!),
                          status: statuses.randomElement(using: &g)!, gatewayReference: maybe(&g) { text(&$0) }, gatewayCode: maybe(&g) { text(&$0) },
                          refundedMinorUnits: Int64.random(in: 0...1_000, using: &g), createdAt: date(&g), updatedAt: date(&g))
        }
        let operations: [StoredOperation] = attempts.flatMap { attempt in
            (0..<Int.random(in: 0...2, using: &g)).map { n in
                StoredOperation(reference: OperationReference(attempt: attempt.reference, kind: OperationKind.allCases.randomElement(using: &g)!, sequence: n + 1),
                                paymentID: id, merchantID: "m", gateway: attempt.gateway, status: OperationStatus.allCases.randomElement(using: &g)!,
                                amount: Money(minorUnits: Int64.random(in: 1...5_000, using: &g), currency: usd), isFinal: Bool.random(using: &g),
                                gatewayReference: maybe(&g) { text(&$0) }, gatewayCode: maybe(&g) { text(&$0) }, gatewayMessage: maybe(&g) { text(&$0) },
                                idempotencyKey: "k\(n)", requestHash: "h", createdAt: date(&g), updatedAt: date(&g))
            }
        }
        return StoredPayment(id: id, merchantID: text(&g), intent: intent, status: statuses.randomElement(using: &g)!, attempts: attempts,
                             operations: operations, createdAt: date(&g), updatedAt: date(&g))
    }

    @Test("a payment's view: byte for byte what JSONEncoder gives with sorted keys, unescaped slashes and ISO 8601 dates (2,000 drawn)")
    func paymentViews() throws {
        var g = Generator(state: 30)
        for round in 0..<2_000 {
            let view = PaymentView(Self.payment(&g), forMerchant: Bool.random(using: &g))
            let compact = try CompactJSON.encode(view)
            let foundation = try EventRules.encoder.encode(view)
            #expect(Data(compact) == foundation, "round \(round): \(String(decoding: compact, as: UTF8.self)) vs \(String(decoding: foundation, as: UTF8.self))")
            if Data(compact) != foundation { return }
        }
    }

    @Test("every ASCII character and a few beyond it in a string and in a key")
    func everyCharacter() throws {
        var table: [String: String] = [:]
        for scalar in (0..<0x80).compactMap(Unicode.Scalar.init) + ["\u{80}", "\u{FF}", "\u{2028}", "\u{FEFF}", "\u{10FFFF}"] {
            table["k" + String(scalar)] = "v" + String(scalar) + "/"
        }
        #expect(Data(try CompactJSON.encode(table)) == (try EventRules.encoder.encode(table)))
    }

    @Test("dates on both sides of the epoch and of a second: the fraction dropped towards the past, as Foundation does")
    func dates() throws {
        var g = Generator(state: 8601)
        let edges = [-0.5, -1, -0.001, 0, 0.999, 951_782_400.5, 4_107_542_399.999, -2_208_988_800, 253_402_300_799]
        for seconds in edges + (0..<2_000).map({ _ in Self.date(&g).timeIntervalSince1970 }) {
            let date = [Date(timeIntervalSince1970: seconds)]
            #expect(Data(try CompactJSON.encode(date)) == (try EventRules.encoder.encode(date)), "\(seconds)")
        }
    }

    @Test("an event's body: one pass around the change's payment, the same as JSONEncoder's encoding of the whole event")
    func eventBodies() throws {
        var g = Generator(state: 5)
        for _ in 0..<300 {
            var before = Self.payment(&g)
            before.operations = []
            var after = before
            after.status = PaymentStatus.known.randomElement(using: &g)!
            for index in after.attempts.indices { after.attempts[index].status = PaymentStatus.known.randomElement(using: &g)! }
            for event in try EventRules.events(before: Bool.random(using: &g) ? before : nil, after: after, lastSequence: 4, now: Self.date(&g)) {
                #expect(try EventRules.encoder.encode(try event.decoded()) == event.body)
            }
        }
    }

    @Test("what it does not write as Foundation does is refused, and the events' encoding then uses Foundation's")
    func unsupported() throws {
        struct Measured: Encodable { var ratio: Double; var at: Date }
        #expect(throws: CompactJSON.Unsupported.self) { try CompactJSON.encode(Measured(ratio: 0.1, at: Date())) }
        #expect(throws: CompactJSON.Unsupported.self) { try CompactJSON.encode(["blob": Data([1, 2])]) }
        let value = Measured(ratio: 1.5, at: Date(timeIntervalSince1970: 0))
        #expect(try EventRules.encode(value) == (try EventRules.encoder.encode(value)))
    }

    @Test("a stored intent reads back as Foundation reads it, and as it was written (2,000 drawn, slashes escaped as stored)")
    func intents() throws {
        var g = Generator(state: 77)
        for round in 0..<2_000 {
            let intent = Self.payment(&g).intent
            let stored = try SQLitePaymentStore.encode(intent)
            let compact = try CompactJSON.decode(PaymentIntent.self, from: Array(stored.utf8))
            #expect(compact == (try SQLitePaymentStore.decode(PaymentIntent.self, stored)), "round \(round): \(stored)")
            // What IntentCache.remember relies on: the text the store wrote decodes to the intent it wrote.
            #expect(compact == intent, "round \(round)")
        }
    }

    @Test("escapes, surrogate pairs and whitespace read as JSON says; a broken document is refused, not guessed at")
    func decoding() throws {
        let text = try CompactJSON.decode([String: String].self, from: Array(#" { "a\u00e9\/" : "\ud83d\ude00\n\"\\\t" } "#.utf8))
        #expect(text == ["aé/": "😀\n\"\\\t"])
        #expect(try CompactJSON.decode([Int64].self, from: Array("[1,-2,9223372036854775807]".utf8)) == [1, -2, .max])
        for broken in [#"{"a":"#, #"{"a":"b"} x"#, #"["\ud83d"]"#, #"["\x"]"#, "[1,]", #"{"a" "b"}"#, "[\"\u{01}\"]", "tru", #"{"a":1"#, ""] {
            #expect(throws: (any Error).self, "\(broken)") { try CompactJSON.decode([String: Int64].self, from: Array(broken.utf8)) }
        }
        #expect(throws: (any Error).self) { try CompactJSON.decode([Int64].self, from: Array("[9223372036854775808]".utf8)) }
        #expect(throws: (any Error).self) { try CompactJSON.decode([Int].self, from: Array(String(repeating: "[", count: 300).utf8)) }
    }
}
