import Foundation
import Testing
import Till
import TillChaos

@Suite("Routing simulation")
struct RoutingSimulationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let folder = root.appendingPathComponent("docs/routing/scenarios")

    static func scenarios() throws -> [RoutingScenario] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }.sorted().map {
            try JSONDecoder().decode(RoutingScenario.self, from: Data(contentsOf: folder.appendingPathComponent($0)))
        }
    }

    @Test("on every published scenario, learning reaches 98 % of the oracle, beats the static list, and sends a gateway its scores know to be worse at most its exploration share")
    func promises() throws {
        let scenarios = try Self.scenarios()
        #expect(scenarios.count == 5)
        for scenario in scenarios {
            let report = try RoutingSimulation.run(scenario, seed: 1)
            let figures = Dictionary(uniqueKeysWithValues: report.figures.map { ($0.strategy, $0) })
            let learning = try #require(figures[.learning]), fixed = try #require(figures[.static])
            #expect(learning.ofOracle >= 0.98, "\(scenario.name): \(learning)")
            #expect(learning.approved > fixed.approved, "\(scenario.name)")
            #expect(learning.keepsExploration(report.exploration), "\(scenario.name): \(learning)")
            #expect(try #require(learning.knownWorseCases) > 100, "the bound is put to the test: \(scenario.name)")
            #expect(figures[.oracle]!.regret == 0)
        }
    }

    @Test("the same seed gives the same figures (the table in docs/routing.md can be made again)")
    func reproducible() throws {
        let scenario = try #require(try Self.scenarios().first)
        #expect(try RoutingSimulation.run(scenario, seed: 7).figures == (try RoutingSimulation.run(scenario, seed: 7).figures))
    }

    @Test("a scenario whose order leaves a gateway out, or with an unknown currency, is refused with the reason")
    func badScenario() throws {
        var scenario = try #require(try Self.scenarios().first)
        scenario.order.removeLast()
        #expect(throws: ScenarioError.self) { try RoutingSimulation.run(scenario, seed: 1) }
        scenario = try #require(try Self.scenarios().first)
        scenario.segments[0].currency = "XYZ"
        #expect(throws: ScenarioError.self) { try RoutingSimulation.run(scenario, seed: 1) }
    }
}
