import Foundation
import FuzzSupport
import Till
import TillGatewayKit

// TillGatewayKit's x-www-form-urlencoded reader (FormFields.decode), which every form-posting gateway's
// notification goes through, and what is built on it: CanonicalString and DocumentedFields.read.
//
// Property: whatever decodes re-encodes (FormFields.encoded) to a body that decodes to the same pairs.

/// Documented fields with every kind of rule, so DocumentedFields.read checks values of each kind.
private let documented = DocumentedFields([
    "amount": FieldRule(10, .digits, minLength: 1),
    "currency": FieldRule(3, .alphanumeric, minLength: 3),
    "reference": FieldRule(40, .alphanumeric, special: "-_.", minLength: 1),
    "email": FieldRule(254, .alphanumeric, special: "@.+-_"),
])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let fields: FormFields
    do {
        fields = try FormFields.decode(input.data, field: "body")
    } catch {
        _ = error.message
        return 0
    }
    // Round trip: encode, decode again, same pairs in the same order.
    let encoded = fields.encoded()
    do {
        let again = try FormFields.decode(Data(encoded.utf8), field: "body")
        require(again.pairs.count == fields.pairs.count, "re-decoded form has \(again.pairs.count) pairs, not \(fields.pairs.count)")
        for (a, b) in zip(again.pairs, fields.pairs) {
            require(Array(a.name.utf8) == Array(b.name.utf8) && Array(a.value.utf8) == Array(b.value.utf8),
                    "re-decoded pair differs: \(a) vs \(b)")
        }
    } catch {
        require(false, "the encoding of a decoded form does not decode: \(error) (\(encoded))")
    }
    for name in fields.names { _ = fields[name] }
    let canonical = CanonicalString(fields: fields)
    _ = canonical.render(order: .sortedByKey, pairSeparator: "&", keyValueSeparator: "=", omitEmptyValues: true, excluding: ["signature"])
    _ = canonical.render(pairSeparator: ";", keyValueSeparator: ":")
    _ = try? documented.read(fields, prefix: "body")
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
