import Foundation
import Testing
@testable import TillEcommpayServer

/// Reads a fixture of this target (`Fixtures/<name>`).
func fixture(_ name: String) throws -> Data {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures").appendingPathComponent(name)
    return try Data(contentsOf: url)
}
