import ArgumentParser
import Foundation
import TillChaos

struct SimulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Routing compared on synthetic payments: the static configuration, health's demotion, the learning rule and the oracle.",
        discussion: """
            Each scenario (JSON: segments and their shares, gateways and their true approval rates per segment, the \
            changes over time: a rate dropping for an hour, a gateway joining, an outage) is run once per strategy on the \
            same payments and the same customers' answers, through the server's own router, health monitor and scores. \
            One JSON object per scenario and strategy: approved, acceptance, ofOracle (acceptance ÷ the oracle's), regret \
            (the oracle's approvals less its own), worseShareSettled (payments sent first to a gateway at least 5 points \
            worse than the best working one, where nothing changed in the two half-lives before), and for learning \
            knownWorseCases (payments with a gateway its scores knew to be worse among their candidates: its score plus two \
            standard errors below the best's) and knownWorseShare (the share of those sent first to such a gateway). With \
            --check it exits non-zero unless, in every scenario, learning reaches 98 % of the oracle, beats the static \
            configuration, and sends at most its exploration share (give or take three standard deviations of the draws) \
            to a gateway known to be worse.
            """)

    @Argument(help: "Scenario files, or folders of them (docs/routing/scenarios by default).")
    var paths: [String] = ["docs/routing/scenarios"]

    @Option(help: "Seeds to run each scenario with, comma-separated.")
    var seeds: String = "1"

    @Flag(help: "A Markdown table instead of JSON lines.")
    var markdown = false

    @Flag(help: "Exit non-zero unless learning holds its promises on every scenario and seed.")
    var check = false

    func run() throws {
        var files: [URL] = []
        for path in paths {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else { throw ValidationError("no such file or folder: \(path)") }
            if isFolder.boolValue {
                files += try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".json") }.sorted()
                    .map { URL(fileURLWithPath: path).appendingPathComponent($0) }
            } else {
                files.append(URL(fileURLWithPath: path))
            }
        }
        let seedList = try seeds.split(separator: ",").map { part -> UInt64 in
            guard let seed = UInt64(part.trimmingCharacters(in: .whitespaces)) else { throw ValidationError("--seeds: \(part) is not a number") }
            return seed
        }
        var failures: [String] = []
        if markdown {
            print("| scenario | seed | payments | static | health | learning | oracle | learning ÷ oracle | regret | payments with a gateway known worse: how many, share sent to it (exploration) | to a gateway 5 points worse, settled |")
            print("|---|---|---|---|---|---|---|---|---|---|---|")
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for file in files {
            let scenario: RoutingScenario
            do {
                scenario = try JSONDecoder().decode(RoutingScenario.self, from: Data(contentsOf: file))
            } catch {
                throw ValidationError("\(file.path): \(error)")
            }
            for seed in seedList {
                let report = try RoutingSimulation.run(scenario, seed: seed)
                func figures(_ strategy: RoutingSimulation.Strategy) -> RoutingSimulation.Figures {
                    report.figures.first { $0.strategy == strategy }!
                }
                let learning = figures(.learning), fixed = figures(.static)
                if learning.ofOracle < 0.98 { failures.append("\(scenario.name) seed \(seed): learning reached \(learning.ofOracle) of the oracle") }
                if learning.approved <= fixed.approved { failures.append("\(scenario.name) seed \(seed): learning did not beat the static configuration") }
                if !learning.keepsExploration(report.exploration) {
                    failures.append("\(scenario.name) seed \(seed): \(learning.knownWorseShare ?? 0) sent to a gateway known to be worse, exploration \(report.exploration)")
                }
                if markdown {
                    func pct(_ value: Double) -> String { String(format: "%.2f %%", value * 100) }
                    print("| \(scenario.name) | \(seed) | \(learning.payments) | \(pct(fixed.acceptance)) | \(pct(figures(.health).acceptance)) | "
                          + "\(pct(learning.acceptance)) | \(pct(figures(.oracle).acceptance)) | \(pct(learning.ofOracle)) | \(learning.regret) | "
                          + "\(learning.knownWorseCases ?? 0): \(pct(learning.knownWorseShare ?? 0)) (\(pct(report.exploration))) | \(pct(learning.worseShareSettled)) |")
                } else {
                    for figure in report.figures {
                        struct Line: Encodable { let scenario: String; let seed: UInt64; let figures: RoutingSimulation.Figures }
                        print(String(decoding: try encoder.encode(Line(scenario: scenario.name, seed: seed, figures: figure)), as: UTF8.self))
                    }
                }
            }
        }
        if check, !failures.isEmpty {
            for failure in failures { printError(failure) }
            throw ExitCode.failure
        }
    }
}
