import Foundation
import FuzzSupport
import Till
import TillGatewayKit

// TillGatewayKit's strict RFC 8259 reader (OrderedJSON.parse), which every JSON body the server and the gateway
// modules read goes through first.
//
// Properties (the doc comment of `serialized()` promises the first):
// - whatever parses serialises to text that parses to the same value;
// - serialising is a fixed point: the second serialisation is byte for byte the first;
// - a value nested deeper than maxDepth is refused, so parsing with a smaller limit never succeeds on a deeper value.

private func depth(_ value: OrderedJSON) -> Int {
    switch value {
    case .object(let members): 1 + (members.map { depth($0.value) }.max() ?? 0)
    case .array(let items): 1 + (items.map(depth).max() ?? 0)
    default: 0
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    let value: OrderedJSON
    do {
        value = try OrderedJSON.parse(input.data, field: "body")
    } catch {
        _ = error.message
        return 0
    }
    let text = value.serialized()
    do {
        let again = try OrderedJSON.parse(text, field: "body")
        require(again == value, "serialised value parses to another value: \(lossyText(text))")
        let second = again.serialized()
        require(second == text, "serialisation is not a fixed point: \(lossyText(text)) vs \(lossyText(second))")
    } catch {
        require(false, "serialised value does not parse: \(error) (\(lossyText(text)))")
    }
    let levels = depth(value)
    require(levels <= 64, "a value \(levels) levels deep was accepted under maxDepth 64")
    if levels > 1 {
        let shallower = try? OrderedJSON.parse(input.data, field: "body", maxDepth: levels - 1)
        require(shallower == nil, "a value \(levels) levels deep was accepted under maxDepth \(levels - 1)")
    }
    // The accessors every reader uses.
    if let members = value.objectMembers {
        for member in members { _ = value[member.key]; _ = member.value.stringValue; _ = member.value.numberText }
    }
    _ = value.arrayValue
    _ = value.boolValue
    _ = value.isNull
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
