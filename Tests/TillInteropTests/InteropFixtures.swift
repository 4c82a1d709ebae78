import Foundation

/// The fixtures beside this test target (`Tests/TillInteropTests/Fixtures`), each naming its source.
enum InteropFixtures {
    static let directory = PythonEnvironment.targetDirectory.appendingPathComponent("Fixtures")

    /// The bytes of `Fixtures/<name>`; a missing file throws, so a test fails rather than skips.
    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(name))
    }

    /// `Fixtures/<name>` decoded as `type`.
    static func decode<Value: Decodable>(_ name: String, as type: Value.Type) throws -> Value {
        try JSONDecoder().decode(Value.self, from: data(name))
    }

    /// The JSON value at `key` of `Fixtures/<name>`'s top-level object, re-encoded.
    static func member(_ key: String, of name: String) throws -> Any {
        guard let object = try JSONSerialization.jsonObject(with: data(name)) as? [String: Any], let value = object[key] else {
            throw InteropError("Fixtures/\(name) has no member \(key)")
        }
        return value
    }
}

/// The official webhook vectors (`Fixtures/webhooks.json`).
struct WebhookVectors: Decodable {
    struct Vector: Decodable {
        var id: String
        /// `valid` or `invalid`.
        var expect: String
        var keyId: String
        var secretKey: String
        var signature: String
        var bodyBase64: String
        var bodySHA256: String

        var body: Data { Data(base64Encoded: bodyBase64) ?? Data() }
    }
    var vectors: [Vector]
}

/// The Python webhook helper's side (`Python/webhooks.py verify`).
enum WebhookHelper {
    struct Delivery: Encodable {
        var bodyBase64: String
        /// Name and value, in the order received.
        var headers: [[String]]

        init(body: Data, headers: [(name: String, value: String)]) {
            bodyBase64 = body.base64EncodedString()
            self.headers = headers.map { [$0.name, $0.value] }
        }
    }

    struct Verdict: Decodable {
        var ok: Bool
        var eventId: String?
        var type: String?
        var apiVersion: String?
        var merchantId: String?
        var error: String?
    }

    /// `WebhooksHelper.unmarshal(body_bytes, headers)` for each delivery, with `secrets` in the
    /// SDK's in-memory key store.
    static func unmarshal(_ deliveries: [Delivery], secrets: [String: String], python: PythonEnvironment) async throws -> [Verdict] {
        struct Request: Encodable {
            var secrets: [String: String]
            var deliveries: [Delivery]
        }
        struct Answer: Decodable { var results: [Verdict] }
        let results = try await python.run("webhooks.py", ["verify"], input: Request(secrets: secrets, deliveries: deliveries),
                                           as: Answer.self).results
        guard results.count == deliveries.count else {
            throw InteropError("webhooks.py answered \(results.count) verdicts for \(deliveries.count) deliveries")
        }
        return results
    }

    /// `body` with one byte changed (its middle byte, bit 0 flipped).
    static func flippedByte(_ body: Data) -> Data {
        var bytes = [UInt8](body)
        guard !bytes.isEmpty else { return Data([0x20]) }
        bytes[bytes.count / 2] ^= 0x01
        return Data(bytes)
    }
}
