import Foundation
import Logging
import Testing
import Till
import TillService
@testable import TillServer

@Suite("JSON log lines (till server --log-format json)")
struct JSONLogHandlerTests {
    @Test("one JSON object per line: time, level, label, message, source and the merged metadata; below the level nothing")
    func lines() throws {
        let written = Locked<[Data]>([])
        var logger = Logger(label: "till.server") { label in
            JSONLogHandler(label: label, level: .notice) { data in written.withLock { $0.append(data) } }
        }
        logger[metadataKey: "request_id"] = "r-1"
        logger.info("not written")
        logger.warning("notification rejected", metadata: ["gateway": "payfort", "counts": ["a": "1"], "list": ["x", "y"]])
        let lines = written.withLock { $0 }
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.last == UInt8(ascii: "\n") && !line.dropLast().contains(UInt8(ascii: "\n")))
        let object = try #require(try JSONSerialization.jsonObject(with: line) as? [String: Any])
        #expect(object["level"] as? String == "warning" && object["label"] as? String == "till.server")
        #expect(object["message"] as? String == "notification rejected")
        let metadata = try #require(object["metadata"] as? [String: Any])
        #expect(metadata["gateway"] as? String == "payfort" && metadata["request_id"] as? String == "r-1")
        #expect((metadata["counts"] as? [String: String]) == ["a": "1"] && (metadata["list"] as? [String]) == ["x", "y"])
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
    }
}

@Suite("What the service group logs about the reconciler")
struct ReconcilerDescriptionTests {
    @Test("the reconciler describes itself by name only: the service group logs services' descriptions, and its state holds the merchants' API key digests")
    func description() async throws {
        let harness = try await ServerHarness(.sqlite)
        defer { Task { await harness.stop() } }
        let reconciler = Reconciler(state: harness.state, store: harness.store, settings: ReconciliationSettings(), logger: Logger(label: "test"))
        #expect(String(describing: reconciler) == "Reconciler")
    }
}
