import ArgumentParser
import Crypto
import _CryptoExtras
import Foundation
import Till
import TillWorldline

/// `till bench encrypt`: Worldline's client-side encryption of one payment (the plaintext JSON, a
/// fresh content key wrapped with RSA-OAEP, AES-256-CBC and the HMAC-SHA-512 tag), timed per call,
/// next to its floor measured in the same run: the three primitives, each called alone, added up.
struct EncryptBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "encrypt",
        abstract: "Worldline client-side encryption of one payment (JWE: RSA-OAEP + AES-CBC + HMAC): p50/p99 next to the primitives' floor.")

    @Option(help: "Timed encryptions per figure.")
    var iterations = 5_000

    @Option(help: "RSA key size in bits (the gateway's keys are 2048).")
    var keyBits = 2048

    struct Figures: Encodable {
        let what: String
        let iterations: Int
        let keyBits: Int
        let p50Micros: Double
        let p99Micros: Double
        let ratioToFloorP50: Double?
    }

    func run() async throws {
        #if DEBUG
        printError("note: this is a debug build; run `swift run -c release till bench encrypt` for real figures")
        #endif
        let size: _RSA.Signing.KeySize = keyBits == 4096 ? .bits4096 : keyBits == 3072 ? .bits3072 : .bits2048
        let privateKey = try _RSA.Encryption.PrivateKey(keySize: size)
        let der = privateKey.publicKey.derRepresentation
        let key = try WorldlinePublicKey(keyId: "bench-key", publicKey: der.base64EncodedString())
        let input = WorldlineCustomerInput(
            clientSessionId: "8d4f1a0a2e1b4c9d9a7f6e5d4c3b2a10", paymentProductId: 1,
            values: [.init(key: "cardNumber", value: "4567350000427977"), .init(key: "expiryDate", value: "1230"),
                     .init(key: "cvv", value: "123"), .init(key: "cardholderName", value: "Ada Lovelace")])
        let publicKey = try _RSA.Encryption.PublicKey(derRepresentation: der)
        let plaintext = Data(#"{"clientSessionId": "8d4f1a0a2e1b4c9d9a7f6e5d4c3b2a10", "nonce": "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0", "paymentProductId": 1, "paymentValues": [{"key":"cardNumber","value":"4567350000427977"},{"key":"expiryDate","value":"1230"},{"key":"cvv","value":"123"},{"key":"cardholderName","value":"Ada Lovelace"}]}"#.utf8)
        let aad = Data("eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZDQkMtSFM1MTIiLCJraWQiOiJiZW5jaC1rZXkifQ".utf8)

        let rsaOnly = try time(iterations) { _ = try publicKey.encrypt(Data(repeating: 7, count: 64), padding: .PKCS1_OAEP) }
        let aesKey = SymmetricKey(size: .bits256)
        let fixedIV = try AES._CBC.IV(ivBytes: [UInt8](repeating: 1, count: 16))
        let aesOnly = try time(iterations) { _ = try AES._CBC.encrypt(plaintext, using: aesKey, iv: fixedIV) }
        let macKey = SymmetricKey(size: .bits256)
        let macOnly = try time(iterations) {
            var mac = HMAC<SHA512>(key: macKey)
            mac.update(data: aad)
            mac.update(data: plaintext)
            _ = mac.finalize()
        }
        let encrypt = try time(iterations) { _ = try WorldlineEncryptor.encrypt(input, to: key) }
        // The floor: the three primitives a JWE needs, each measured alone, added up.
        let floor = (p50: rsaOnly.p50 + aesOnly.p50 + macOnly.p50, p99: rsaOnly.p99 + aesOnly.p99 + macOnly.p99)
        try printJSONLine(Figures(what: "floor: RSA-OAEP wrap + AES-256-CBC + HMAC-SHA-512, each alone, added", iterations: iterations,
                                  keyBits: keyBits, p50Micros: (floor.p50 * 100).rounded() / 100, p99Micros: (floor.p99 * 100).rounded() / 100,
                                  ratioToFloorP50: 1))
        try printJSONLine(Figures(what: "RSA-OAEP wrap alone", iterations: iterations, keyBits: keyBits,
                                  p50Micros: rsaOnly.p50, p99Micros: rsaOnly.p99, ratioToFloorP50: rsaOnly.p50 / floor.p50))
        try printJSONLine(Figures(what: "AES-256-CBC alone (\(plaintext.count) bytes)", iterations: iterations, keyBits: keyBits,
                                  p50Micros: aesOnly.p50, p99Micros: aesOnly.p99, ratioToFloorP50: aesOnly.p50 / floor.p50))
        try printJSONLine(Figures(what: "HMAC-SHA-512 alone", iterations: iterations, keyBits: keyBits,
                                  p50Micros: macOnly.p50, p99Micros: macOnly.p99, ratioToFloorP50: macOnly.p50 / floor.p50))
        try printJSONLine(Figures(what: "WorldlineEncryptor.encrypt (one payment, JWE compact)", iterations: iterations, keyBits: keyBits,
                                  p50Micros: encrypt.p50, p99Micros: encrypt.p99, ratioToFloorP50: encrypt.p50 / floor.p50))
    }

    /// p50 and p99 of `body` in microseconds, after a tenth as many untimed calls.
    func time(_ count: Int, _ body: () throws -> Void) throws -> (p50: Double, p99: Double) {
        for _ in 0..<max(1, count / 10) { try body() }
        let clock = ContinuousClock()
        var samples: [Double] = []
        samples.reserveCapacity(count)
        for _ in 0..<count {
            let start = clock.now
            try body()
            let elapsed = clock.now - start
            samples.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
        }
        samples.sort()
        func percentile(_ p: Double) -> Double { (samples[min(samples.count - 1, Int(Double(samples.count) * p))] * 100).rounded() / 100 }
        return (percentile(0.50), percentile(0.99))
    }
}
