import Foundation
import TillGatewayKit

/// Where the Server API is. Hosts from Worldline's API reference ("Environments" and "API endpoints",
/// apireference.connect.worldline-solutions.com): pre-production `api.preprod.connect.worldline-solutions.com`
/// (sandbox accounts live there too; also the official SDKs' test configuration) and production
/// `api.connect.worldline-solutions.com`. `eu.sandbox.api-ingenico.com` is the older sandbox host, which
/// the current reference names only for the File API. The official Python SDK takes the
/// endpoint as scheme, host and port only (`communicator.py`), and so does Till: the API's paths
/// (`/v1/{merchantId}/…`) go after it.
public enum WorldlineEnvironment: Sendable, Hashable {
    case sandbox
    case preproduction
    case production
    /// Any other endpoint (the local sandbox, a proxy): scheme, host and port, no path.
    case custom(URL)

    /// The endpoint: scheme, host and port.
    public var endpoint: URL {
        switch self {
        case .sandbox: URL(string: "https://eu.sandbox.api-ingenico.com")!
        case .preproduction: URL(string: "https://api.preprod.connect.worldline-solutions.com")!
        case .production: URL(string: "https://api.connect.worldline-solutions.com")!
        case .custom(let url): url
        }
    }
}

/// The merchant's Server API credentials and webhook keys (Configuration Center: "API keys" and
/// "Webhook keys").
public struct WorldlineCredentials: Sendable, Hashable, CustomStringConvertible {
    public var apiKeyId: String
    public var secretApiKey: String
    /// Webhook secret keys by key id (`X-GCS-KeyId`); more than one while a key is rotated.
    public var webhookKeys: [String: String]

    public init(apiKeyId: String, secretApiKey: String, webhookKeys: [String: String] = [:]) {
        self.apiKeyId = apiKeyId
        self.secretApiKey = secretApiKey
        self.webhookKeys = webhookKeys
    }

    /// Never shows a secret.
    public var description: String { "WorldlineCredentials(apiKeyId: \(apiKeyId), webhookKeyIds: \(webhookKeys.keys.sorted()))" }
}

/// One signed Server API call: the `v1HMAC` authentication of the official server SDKs
/// (python `v1hmac_authenticator.py`, `communicator.py`).
struct WorldlineServerAPI: Sendable {
    let gateway: GatewayID
    let environment: WorldlineEnvironment
    let merchantId: String
    let credentials: WorldlineCredentials
    let client: GatewayHTTPClient
    /// `X-GCS-ServerMetaInfo`: Base64 of the JSON the Python SDK sends (`metadata_provider.py`), naming Till.
    let serverMetaInfo: String
    let now: @Sendable () -> Date

    init(gateway: GatewayID, environment: WorldlineEnvironment, merchantId: String, credentials: WorldlineCredentials,
         integrator: String, transport: any HTTPTransport, now: @escaping @Sendable () -> Date) {
        self.gateway = gateway
        self.environment = environment
        self.merchantId = merchantId
        self.credentials = credentials
        self.client = GatewayHTTPClient(gateway: gateway, transport: transport)
        self.now = now
        let meta: [(String, String)] = [("platformIdentifier", Self.platform), ("sdkIdentifier", "TillWorldlineServer/v1"),
                                        ("sdkCreator", "Till"), ("integrator", integrator)]
        self.serverMetaInfo = Data(Self.jsonObject(meta).utf8).base64EncodedString()
    }

    static var platform: String {
        #if os(Linux)
        "Linux"
        #elseif os(macOS)
        "macOS"
        #else
        "Apple"
        #endif
    }

    /// A flat JSON object of strings, members in order.
    static func jsonObject(_ members: [(String, String)]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        func quoted(_ text: String) -> String { (try? encoder.encode(text)).flatMap { String(data: $0, encoding: .utf8) } ?? "\"\"" }
        return "{" + members.map { "\(quoted($0.0)):\(quoted($0.1))" }.joined(separator: ",") + "}"
    }

    /// The signed request for `path` under `/v1/{merchantId}` (`path` starts with `/`).
    /// - Parameters:
    ///   - query: query items; Till sends only values that need no escaping (references, numbers), so
    ///     the signed query is the sent one whichever way a verifier reads it (the Python SDK signs it
    ///     percent-encoded, the Java and .NET SDKs decoded).
    ///   - clientMetaInfo: the app's meta information, as JSON (sent Base64-encoded).
    ///   - idempotenceKey: `X-GCS-Idempotence-Key`, signed like every `X-GCS` header.
    func request(_ method: TransportRequest.Method, _ path: String, query: [(String, String)] = [], body: Data? = nil,
                 clientMetaInfo: String? = nil, idempotenceKey: String? = nil) throws(CheckoutError) -> TransportRequest {
        let resource = "/v1/\(Self.pathSegment(merchantId))\(path)"
        let queryText = query.isEmpty ? nil : query.map { "\(Self.queryValue($0.0))=\(Self.queryValue($0.1))" }.joined(separator: "&")
        var components = URLComponents(url: environment.endpoint, resolvingAgainstBaseURL: false)
        components?.percentEncodedPath = resource
        components?.percentEncodedQuery = queryText
        guard let url = components?.url else {
            throw CheckoutError(.misconfigured, field: "settings.base_url", message: "cannot build a Server API URL", gateway: gateway)
        }
        var headers: [String: String] = [:]
        let contentType = body == nil ? nil : "application/json"
        if let contentType { headers["Content-Type"] = contentType }
        let date = WorldlineV1HMAC.httpDate(now())
        headers["Date"] = date
        headers["X-GCS-ServerMetaInfo"] = serverMetaInfo
        if let clientMetaInfo { headers["X-GCS-ClientMetaInfo"] = Data(clientMetaInfo.utf8).base64EncodedString() }
        if let idempotenceKey { headers["X-GCS-Idempotence-Key"] = idempotenceKey }
        let text = WorldlineV1HMAC.stringToSign(method: method.rawValue, contentType: contentType, date: date, headers: headers,
                                                path: resource, query: queryText)
        headers["Authorization"] = try WorldlineV1HMAC.authorization(apiKeyId: credentials.apiKeyId, secretApiKey: credentials.secretApiKey,
                                                                 stringToSign: text)
        headers["Accept"] = "application/json"
        return TransportRequest(method: method, url: url, headers: headers, body: body, timeout: .seconds(30))
    }

    /// A JSON body as the Server API takes it.
    func body<Body: Encodable>(_ value: Body) throws(CheckoutError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { return try encoder.encode(value) } catch {
            throw CheckoutError(.invalidField, field: "body", message: "cannot encode the request: \(error)", gateway: gateway)
        }
    }

    /// Sends `request` and returns the answer, whatever its status.
    func send(_ request: TransportRequest) async throws(CheckoutError) -> TransportResponse {
        try await client.send(request)
    }

    /// Decodes a 2xx body as `Answer` (an unreadable one is `malformed_body`, `unknown_outcome`, naming
    /// the path, as ``GatewayHTTPClient/decodeAnswer(_:as:decoder:)`` reads every gateway's answers); anything
    /// else becomes the error ``failure(_:)`` gives.
    func decode<Answer: Decodable>(_ response: TransportResponse, as: Answer.Type) throws(CheckoutError) -> Answer {
        guard (200..<300).contains(response.statusCode) else { throw failure(response) }
        return try client.decodeAnswer(response, as: Answer.self)
    }

    /// The error body of a failed call, when it has one.
    static func errorBody(_ response: TransportResponse) -> WorldlineAPIError? {
        try? JSONDecoder().decode(WorldlineAPIError.self, from: response.body)
    }

    /// What a failed call means, by the Python SDK's reading of the status (`exception_factory.py`):
    /// 400 a refused request (nothing was done), 401/403 refused credentials (configuration), 404/410 no
    /// such object, 409 a conflict (an idempotent request still being processed: outcome unknown), 5xx
    /// or anything else: the request may have been processed.
    func failure(_ response: TransportResponse) -> CheckoutError {
        let body = Self.errorBody(response)
        let first = body?.errors?.first
        let code = first?.code
        let message = GatewayText.safe(first?.message) ?? "HTTP \(response.statusCode)"
        let field = first?.propertyName.map { "gateway.\($0)" }
        switch response.statusCode {
        case 400:
            return CheckoutError(.invalidField, category: .invalidInput, field: field, message: "Worldline refused the request: \(message)",
                                 gateway: gateway, gatewayCode: code, gatewayMessage: GatewayText.safe(first?.message))
        case 401, 403:
            return CheckoutError(.misconfigured, category: .configuration, field: "credentials.api_key_id",
                                 message: "Worldline refused the credentials: \(message)", gateway: gateway, gatewayCode: code)
        case 404, 410:
            return CheckoutError(.attemptNotFound, field: field, message: "Worldline has no such object: \(message)", gateway: gateway,
                                 gatewayCode: code)
        default:
            return CheckoutError(.gatewayError, category: .unknownOutcome, field: field,
                                 message: "Worldline answered HTTP \(response.statusCode): \(message)", gateway: gateway,
                                 gatewayCode: code ?? String(response.statusCode), gatewayMessage: GatewayText.safe(first?.message))
        }
    }

    /// A path segment, percent-encoded.
    static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? text
    }

    static func queryValue(_ text: String) -> String { pathSegment(text) }
}
