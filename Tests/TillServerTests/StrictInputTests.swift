import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import Till
import TillService
import TillTesting
@testable import TillServer

/// What a generator of requests from docs/openapi.yaml (Schemathesis) found the server took or refused against the
/// document: each now answered as the document says.
@Suite("Strict input: what the API fuzzer found", .serialized)
struct StrictInputTests {
    @Test("lengths count code points: an `a` with 3,000 combining accents is 3,001 characters, past a 500 limit")
    func codePoints() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let accents = "a" + String(repeating: "\u{0301}", count: 3_000)
        #expect(accents.count == 1)
        #expect(Validators.length(accents, field: "f", maxLength: 500).first?.code == .fieldTooLong)
        let created = try await h.send("POST", "v1/payments", json: #"{"merchantReference":"cp-1","amount":{"value":2500,"currency":"USD"},"method":"card","metadata":{"k":"\#(accents)"}}"#)
        #expect(created.status == 400 || created.status == 422)
        #expect(created.errorField == "body.metadata.k")
    }

    @Test("null for a key is refused by its path (the document gives none a null); a change's top-level null still clears")
    func nulls() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        let refused = try await h.send("POST", "v1/payments", json: #"{"merchantReference":"n-1","amount":{"value":2500,"currency":"USD"},"method":"card","cardIIN":null}"#)
        #expect(refused.status == 400)
        #expect(refused.errorField == "body.cardIIN")
        let nested = try await h.send("POST", "v1/payments", json: #"{"merchantReference":"n-2","amount":{"value":2500,"currency":"USD"},"method":"card","customer":{"email":null}}"#)
        #expect(nested.errorField == "body.customer.email")
        let created = try await h.send("POST", "v1/payments", json: #"{"merchantReference":"n-3","amount":{"value":2500,"currency":"USD"},"method":"card","description":"d"}"#)
        let id = try #require(created.json["id"] as? String)
        let cleared = try await h.send("PATCH", "v1/payments/\(id)", json: #"{"description":null}"#)
        #expect(cleared.status == 200)
        #expect(cleared.json["description"] == nil)
        #expect(try await h.send("PATCH", "v1/payments/\(id)", json: #"{"customer":{"locale":null}}"#).errorField == "body.customer.locale")
        #expect(try await h.send("POST", "v1/payments/\(id)/attempts", json: #"{"returnURLs":null}"#).errorField == "body.returnURLs")
    }

    @Test("GET /v1/quarantine: another parameter, one given twice, or a limit out of 1 to 1000 is 400 naming it")
    func quarantineQuery() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        #expect(try await h.send("GET", "v1/quarantine").status == 200)
        for (query, field) in [("limit=null", "limit"), ("limit=0", "limit"), ("limit=1001", "limit"), ("foo=1", "foo"), ("limit=5&limit=5", "limit")] {
            var request = URLRequest(url: URL(string: "\(h.baseURL.absoluteString)/v1/quarantine?\(query)")!)
            request.setValue("Bearer \(h.apiKey)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 400, "\(query)")
            let error = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? [String: Any]
            #expect(error?["field"] as? String == field, "\(query)")
        }
    }

    @Test("a list's text filters count characters as the document's maxLength does: 128 two-byte letters are taken, 129 are not")
    func filterLengths() async throws {
        let h = try await ServerHarness(.sqlite)
        defer { Task { await h.stop() } }
        func get(_ path: String, _ name: String, _ value: String) async throws -> (status: Int, field: String?) {
            var components = URLComponents(string: "\(h.baseURL.absoluteString)/\(path)")!
            components.queryItems = [URLQueryItem(name: name, value: value)]
            var request = URLRequest(url: components.url!)
            request.setValue("Bearer \(h.apiKey)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await URLSession.shared.data(for: request)
            let error = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? [String: Any]
            return ((response as? HTTPURLResponse)?.statusCode ?? 0, error?["field"] as? String)
        }
        let letters = String(repeating: "é", count: 128)   // 256 bytes of UTF-8
        for (path, name, value) in [("v1/events", "payment", letters), ("v1/payments", "merchantReference", letters),
                                    ("v1/payments", "customerEmail", String(repeating: "é", count: 120) + "@" + String(repeating: "é", count: 120))] {
            #expect(try await get(path, name, value).status == 200, "\(path) \(name)")
        }
        #expect(try await get("v1/events", "payment", letters + "é").field == "payment")
        #expect(try await get("v1/payments", "merchantReference", letters + "é").field == "merchantReference")
    }

    @Test("RFC 3339 times: t and z in either case, offsets to 23:59, leap seconds, fractions; impossible dates refused")
    func times() {
        #expect(RFC3339.date("2026-11-28T14:05:00Z") == Date(timeIntervalSince1970: 1_795_874_700))
        #expect(RFC3339.date("2026-11-28t14:05:00z") == Date(timeIntervalSince1970: 1_795_874_700))
        #expect(RFC3339.date("2026-11-28T14:05:00+23:59") == Date(timeIntervalSince1970: 1_795_874_700 - 86_340))
        #expect(RFC3339.date("2026-11-28T14:05:00-01:30") == Date(timeIntervalSince1970: 1_795_874_700 + 5_400))
        #expect(RFC3339.date("2026-11-28T14:05:00.5Z") == Date(timeIntervalSince1970: 1_795_874_700.5))
        #expect(RFC3339.date("2016-12-31T23:59:60Z") != nil)
        #expect(RFC3339.date("2024-02-29T00:00:00Z") == Date(timeIntervalSince1970: 1_709_164_800))
        #expect(RFC3339.date("1969-12-31T23:59:59Z") == Date(timeIntervalSince1970: -1))
        for bad in ["2023-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-28T24:00:00Z", "2026-11-28T14:05:00+24:00", "2026-11-28T14:05:00",
                    "2026-11-28 14:05:00Z", "2026-11-28T14:05:00.Z", "2026-11-28T14:05Z", "26-11-28T14:05:00Z", "2026-11-28T14:05:00Z "] {
            #expect(RFC3339.date(bad) == nil, "\(bad)")
        }
    }

    @Test("an e-mail address is read as Unicode scalars: an @ followed by an emoji modifier is still the @; control characters are refused")
    func emails() {
        #expect(Validators.email("a@\u{1F3FB}x.y", field: "e").isEmpty)
        #expect(Validators.email("p\u{00D1}@b\u{0301}.c", field: "e").isEmpty)
        for bad in ["a@b", "a@.b", "a@b.", "@b.c", "a@b@c.d", "a b@c.d", "a\u{0006}@c.d", "a@c\u{001F}.d", "a@c\u{0085}.d", "a@c\u{00A0}.d"] {
            #expect(!Validators.email(bad, field: "e").isEmpty, "\(bad.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test("an IP address is what inet_pton reads: ':::' and '1:2:3' are not")
    func ipAddresses() {
        for good in ["203.0.113.7", "2001:db8::1", "::1", "::", "::ffff:192.0.2.1", "1:2:3:4:5:6:7:8"] { #expect(PaymentIntent.isIPAddress(good), "\(good)") }
        for bad in ["1.2.3.4\u{0}junk", "::1\u{0}", " 1.2.3.4", ":::", "1:2:3", "1.2.3", "256.1.1.1", "1.2.3.4.5", "2001:db8::1::2", "g::1", "1:2:3:4:5:6:7:8:9", ""] {
            #expect(!PaymentIntent.isIPAddress(bad), "\(bad)")
        }
    }
}
