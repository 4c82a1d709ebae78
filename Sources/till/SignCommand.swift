import ArgumentParser
import Foundation
import Till
import TillCitcon
import TillPayFort

/// Reads a JSON object of parameters, keeping key order (PayFort signs nested objects in order).
func readPayFortParameters(_ file: String) throws -> PayFortParameters {
    guard let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file) else {
        printError("cannot read \(file)")
        throw ExitCode.failure
    }
    do {
        return try PayFortParameters.json(data)
    } catch {
        printError("\(file): \(error.message)")
        throw ExitCode.failure
    }
}

/// Reads an IPN body as Citcon sent it (JSON or form-encoded).
func readCitconIPN(_ file: String) throws -> CitconIPNFields {
    guard let data = file == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: file) else {
        printError("cannot read \(file)")
        throw ExitCode.failure
    }
    do {
        return try CitconIPNFields.parse(data)
    } catch {
        printError("\(file): \(error.field.map { "\($0): " } ?? "")\(error.message)")
        throw ExitCode.failure
    }
}

struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Print the exact string a gateway signs, then the signature (last line).",
        subcommands: [PayFort.self, Citcon.self])

    struct Citcon: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "citcon",
            abstract: "Citcon IPN: SHA-256 over the fields listed in `fields` (and `fields`), sorted, k=v&…, then &secret=.")

        @Option(help: "The merchant's Citcon API secret.")
        var secret: String

        @Option(help: "The IPN body as sent, JSON or form-encoded (`-` for standard input). A `sign` field is ignored.")
        var body: String

        func run() throws {
            let fields = try readCitconIPN(body)
            do {
                print(try CitconSignature.stringToSign(fields, secret: secret))
                print(try CitconSignature.sign(fields, secret: secret))
            } catch {
                printError("cannot sign: \(error)")
                throw ExitCode.failure
            }
        }
    }

    struct PayFort: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "payfort",
            abstract: "PayFort: SHA-256 (or SHA-512) over phrase + sorted key=value pairs + phrase.")

        @Option(help: "The SHA request phrase (to sign a request) or response phrase (to check a response).")
        var phrase: String

        @Flag(help: "SHA-512 instead of SHA-256.")
        var sha512 = false

        @Option(help: "A JSON object of the parameters (`-` for standard input). A `signature` key is ignored.")
        var params: String

        func run() throws {
            let parameters = try readPayFortParameters(params)
            let signer = PayFortSignature(sha512 ? .sha512 : .sha256)
            print(signer.stringToSign(parameters, phrase: phrase))
            print(signer.sign(parameters, phrase: phrase))
        }
    }
}

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check a gateway's signature; exit 0 when it is valid, non-zero with the reason when not.",
        subcommands: [PayFort.self, Citcon.self])

    struct Citcon: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "citcon", abstract: "Citcon: checks an IPN's `sign`.")

        @Option(help: "The merchant's Citcon API secret.")
        var secret: String

        @Option(help: "The IPN body exactly as Citcon sent it, JSON or form-encoded (`-` for standard input).")
        var body: String

        func run() throws {
            let fields = try readCitconIPN(body)
            do {
                try CitconSignature.verify(fields, secret: secret)
                print("valid: the sign matches and covers \(CitconSignature.requiredSignedFields.joined(separator: ", "))")
            } catch {
                print("invalid: \(error.field.map { "\($0): " } ?? "")\(error.message)")
                if let expected = try? CitconSignature.stringToSign(fields, secret: secret) {
                    print("string to sign: \(expected)")
                    print("expected sign: \((try? CitconSignature.sign(fields, secret: secret)) ?? "?")")
                }
                throw ExitCode.failure
            }
        }
    }

    struct PayFort: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "payfort", abstract: "PayFort: checks the `signature` parameter.")

        @Option(help: "The phrase the signer used (the response phrase for PayFort's responses and notifications).")
        var phrase: String

        @Flag(help: "SHA-512 instead of SHA-256.")
        var sha512 = false

        @Option(help: "A JSON object of the parameters, with `signature` (`-` for standard input).")
        var params: String

        func run() throws {
            let parameters = try readPayFortParameters(params)
            let signer = PayFortSignature(sha512 ? .sha512 : .sha256)
            do {
                try signer.verify(parameters, phrase: phrase)
                print("valid: the signature matches")
            } catch {
                print("invalid: \(error.message)")
                print("string to sign: \(signer.stringToSign(parameters, phrase: phrase))")
                print("expected signature: \(signer.sign(parameters, phrase: phrase))")
                throw ExitCode.failure
            }
        }
    }
}
