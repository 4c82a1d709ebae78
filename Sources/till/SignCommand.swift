import ArgumentParser
import Foundation
import Till
import TillOrchestration
import TillGatewayKit

/// `till sign <module> [--option value …]` and `till verify <module> …`: each gateway module brings its
/// own signature debugger and options (``SignatureDebugger``), so the tool knows no gateway by name.
struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print the exact string a gateway signs, then the signature (last line).",
        discussion: "Modules: " + Gateways.plugins.compactMap { plugin in
            plugin.debugger.map { "\n  \(plugin.module): \($0.signSummary)\n    " + DebuggerOptions.usage($0.signOptions) }
        }.joined())

    @Argument(help: "The gateway module (payfort, citcon, …).")
    var module: String

    @Argument(parsing: .captureForPassthrough, help: "The module's options (see the list above).")
    var options: [String] = []

    func run() throws {
        let debugger = try DebuggerOptions.debugger(module)
        let arguments = try DebuggerOptions.parse(options, allowed: debugger.signOptions, module: module)
        do {
            for line in try debugger.sign(arguments) { print(line) }
        } catch let error as CheckoutError {
            printError("cannot sign: \(error.field.map { "\($0): " } ?? "")\(error.message)")
            throw ExitCode.failure
        }
    }
}

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a gateway's signature; exit 0 when it is valid, non-zero with the reason when not.",
        discussion: "Modules: " + Gateways.plugins.compactMap { plugin in
            plugin.debugger.map { "\n  \(plugin.module): " + DebuggerOptions.usage($0.verifyOptions) }
        }.joined())

    @Argument(help: "The gateway module (payfort, citcon, …).")
    var module: String

    @Argument(parsing: .captureForPassthrough, help: "The module's options (see the list above).")
    var options: [String] = []

    func run() throws {
        let debugger = try DebuggerOptions.debugger(module)
        let arguments = try DebuggerOptions.parse(options, allowed: debugger.verifyOptions, module: module)
        let verdict: SignatureDebugger.Verdict
        do {
            verdict = try debugger.verify(arguments)
        } catch let error as CheckoutError {
            printError("cannot verify: \(error.field.map { "\($0): " } ?? "")\(error.message)")
            throw ExitCode.failure
        }
        for line in verdict.lines { print(line) }
        if !verdict.valid { throw ExitCode.failure }
    }
}

/// Parses `--name value` options against a debugger's declared options.
enum DebuggerOptions {
    static func debugger(_ module: String) throws -> SignatureDebugger {
        guard let plugin = Gateways.plugin(module) else {
            printError("unknown gateway module \"\(module)\" (known: \(Gateways.plugins.map(\.module).joined(separator: ", ")))")
            throw ExitCode.validationFailure
        }
        guard let debugger = plugin.debugger else {
            printError("the \(module) module has no signature debugger")
            throw ExitCode.validationFailure
        }
        return debugger
    }

    static func usage(_ options: [SignatureDebugger.Option]) -> String {
        options.map { option in
            let shape = option.isFlag ? "--\(option.name)" : "--\(option.name) VALUE"
            return (option.required ? shape : "[\(shape)]") + (option.repeatable ? " …" : "")
        }.joined(separator: " ")
    }

    /// `--name value`, `--name=value` and `--flag`; unknown, missing and repeated (unless repeatable)
    /// options are refused, naming the option.
    static func parse(_ words: [String], allowed: [SignatureDebugger.Option], module: String) throws -> DebuggerArguments {
        let byName = Dictionary(allowed.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var values: [String: [String]] = [:]
        var index = 0
        func fail(_ message: String) throws -> Never {
            printError("\(module): \(message)\nusage: \(usage(allowed))")
            throw ExitCode.validationFailure
        }
        while index < words.count {
            let word = words[index]
            guard word.hasPrefix("--") else { try fail("unexpected argument \"\(word)\"") }
            var name = String(word.dropFirst(2))
            var inline: String?
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = byName[name] else { try fail("unknown option --\(name)") }
            if values[name] != nil && !option.repeatable { try fail("--\(name) given twice") }
            if option.isFlag {
                guard inline == nil else { try fail("--\(name) takes no value") }
                values[name, default: []].append("true")
                index += 1
                continue
            }
            if let inline {
                values[name, default: []].append(inline)
                index += 1
            } else {
                guard index + 1 < words.count else { try fail("--\(name) needs a value") }
                values[name, default: []].append(words[index + 1])
                index += 2
            }
        }
        for option in allowed where option.required && values[option.name] == nil { try fail("--\(option.name) is required") }
        return DebuggerArguments(values)
    }
}
