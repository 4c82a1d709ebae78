// Plugins/Toy/Server/ToyPlugin.swift in a real module: the module's description of itself.

import Foundation
import TillGatewayKit
import TillOrchestration

/// The `toy` gateway module.
///
/// Credentials: `key_id`, `secret_key`. Settings: `base_url` (Toy Pay's production URL when not set).
/// A bad value is refused naming `settings.<name>`, a missing credential naming `credentials.<name>`.
public enum ToyPlugin {
    public static let plugin = GatewayPlugin(
        module: "toy",
        capabilities: ToyGateway.capabilities,
        makeServerHalf: { context in try server(context) },
        makeAppHalf: { context in try client(context) },
        debugger: debugger)

    static let settingNames: Set<String> = ["base_url"]
    static let credentialNames: Set<String> = ["key_id", "secret_key"]

    static func server(_ context: GatewayPluginContext) throws(CheckoutError) -> ToyServer {
        let settings = context.settings
        try settings.rejectUnknown(settings: settingNames, credentials: credentialNames)
        return ToyServer(id: context.id, keyID: try settings.secret("key_id"), secret: try settings.secret("secret_key"),
                         baseURL: try settings.url("base_url") ?? ToyServer.production, transport: context.transport)
    }

    static func client(_ context: GatewayPluginContext) throws(CheckoutError) -> ToyGateway {
        try context.settings.rejectUnknown(settings: settingNames, credentials: credentialNames)
        return ToyGateway(id: context.id, baseURL: try context.settings.url("base_url") ?? ToyServer.production)
    }

    // MARK: Signature debugger

    /// `till sign toy` and `till verify toy`. With `--method` and `--path`, a request's signature;
    /// without them, a notification's (the body alone).
    static let debugger = SignatureDebugger(
        signSummary: "HMAC-SHA256 (hex) of METHOD\\nPATH\\nBODY for requests, of the body alone for notifications.",
        signOptions: [
            .init("secret", help: "The account's secret key.", required: true),
            .init("body", help: "A file holding the body exactly as sent (`-` for standard input).", required: true),
            .init("method", help: "The request's method (with --path): sign a request, not a notification."),
            .init("path", help: "The request's URL path, such as /toy/v1/orders (with --method)."),
        ],
        verifyOptions: [
            .init("secret", help: "The account's secret key.", required: true),
            .init("body", help: "A file holding the body exactly as received (`-` for standard input).", required: true),
            .init("signature", help: "The Toy-Signature header's value.", required: true),
            .init("method", help: "The request's method (with --path): check a request, not a notification."),
            .init("path", help: "The request's URL path (with --method)."),
        ],
        sign: { arguments in
            let (signer, message) = try debuggerInput(arguments)
            return [String(decoding: message, as: UTF8.self), signer.sign(message)]
        },
        verify: { arguments in
            let (signer, message) = try debuggerInput(arguments)
            let signature = try arguments.required("signature")
            if signer.isValid(signature, for: message) {
                return SignatureDebugger.Verdict(valid: true, lines: ["valid: the signature matches"])
            }
            return SignatureDebugger.Verdict(valid: false, lines: [
                "invalid: the signature does not match",
                "string to sign: \(String(decoding: message, as: UTF8.self))",
                "expected signature: \(signer.sign(message))",
            ])
        })

    /// The signer and the signed message the options name.
    /// - Throws: ``CheckoutError`` naming `--secret`, `--body`, `--method` or `--path`.
    static func debuggerInput(_ arguments: DebuggerArguments) throws(CheckoutError) -> (ToySignature, Data) {
        let signer = ToySignature(secret: try arguments.required("secret"))
        let body = try arguments.file("body")
        switch (arguments.value("method"), arguments.value("path")) {
        case (nil, nil):
            return (signer, body)
        case (let method?, let path?):
            return (signer, ToySignature.requestMessage(method: method.uppercased(), path: path, body: body))
        case (nil, _):
            throw CheckoutError(.missingField, field: "--method", message: "--method is required with --path")
        case (_, nil):
            throw CheckoutError(.missingField, field: "--path", message: "--path is required with --method")
        }
    }
}
