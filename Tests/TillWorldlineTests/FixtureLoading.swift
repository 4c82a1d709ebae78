import Foundation

/// The directory of this test target's fixtures (`Tests/TillWorldlineTests/Fixtures`), found beside
/// this source file; the target excludes it from its sources and reads it from disk.
let worldlineFixtureDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures")

/// The bytes of one fixture file (`name` relative to `Fixtures/`, e.g. `"masks.json"`); a missing file
/// throws, so a test fails rather than skips.
func worldlineFixture(_ name: String) throws -> Data {
    try Data(contentsOf: worldlineFixtureDirectory.appendingPathComponent(name))
}
