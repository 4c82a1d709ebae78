import Foundation
import TillGatewayKit

/// Where a logo or tooltip image is.
public enum WorldlineAssets {
    /// `path` (a product's `displayHints.logo`, a tooltip's `image`) as a URL under `assetURL`.
    ///
    /// The Swift client SDK concatenates the two strings and percent-encodes the result for a query
    /// (`ClientApi.getLogoByStringURL`). The gateway's paths come with and without a leading `/`
    /// (`/templates/…`, `templates/…` in the vendor's own samples) and asset URLs with and without a
    /// trailing one, so here exactly one `/` joins them. A path that is already an absolute http(s) URL
    /// (as in the Swift SDK's test stubs) is taken as it is. `nil` for an empty path.
    public static func url(forPath path: String, assetURL: URL) -> URL? {
        guard !path.isEmpty else { return nil }
        if let absolute = URL(string: path), let scheme = absolute.scheme?.lowercased(), scheme == "https" || scheme == "http" {
            return absolute
        }
        var base = assetURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        var tail = Substring(path)
        while tail.hasPrefix("/") { tail = tail.dropFirst() }
        let joined = base + "/" + tail
        return joined.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed).flatMap(URL.init(string:))
    }
}

/// Logos and tooltip images, fetched from the session's asset URL through the transport and kept in
/// memory up to a size bound (least recently used first out).
///
/// Asset requests carry no headers: the Swift client SDK fetches them with a plain `URLSession` request.
public actor WorldlineAssetCache {
    /// The base of the paths.
    public nonisolated let assetURL: URL
    /// The most bytes kept; an asset larger than this is returned but not kept.
    public nonisolated let maxBytes: Int
    private let client: GatewayHTTPClient
    private var entries: [URL: Data] = [:]
    /// Least recently used first.
    private var order: [URL] = []
    private var inFlight: [URL: Task<Result<Data, CheckoutError>, Never>] = [:]
    /// The bytes kept now.
    public private(set) var bytes = 0

    /// A cache of `assetURL`'s files fetched through `transport`, keeping at most `maxBytes`.
    public init(assetURL: URL, transport: any HTTPTransport, maxBytes: Int = 4 << 20, gateway: GatewayID = "worldline") {
        self.assetURL = assetURL
        self.maxBytes = max(0, maxBytes)
        self.client = GatewayHTTPClient(gateway: gateway, transport: transport)
    }

    /// The bytes of the asset at `path` (see ``WorldlineAssets/url(forPath:assetURL:)``), from memory
    /// when kept; one request at a time per asset.
    /// - Throws: ``CheckoutError`` naming `path` when it makes no URL, `gateway_error` for a status
    ///   outside 200–299, or the transport's failure.
    public func data(forPath path: String) async throws(CheckoutError) -> Data {
        guard let url = WorldlineAssets.url(forPath: path, assetURL: assetURL) else {
            throw CheckoutError(.invalidField, field: "path", message: "an asset path makes no URL", gateway: client.gateway)
        }
        return try await data(at: url)
    }

    /// The bytes at `url`, from memory when kept.
    public func data(at url: URL) async throws(CheckoutError) -> Data {
        if let kept = entries[url] {
            touch(url)
            return kept
        }
        let task: Task<Result<Data, CheckoutError>, Never>
        if let running = inFlight[url] {
            task = running
        } else {
            let client = self.client
            task = Task { await Self.fetch(url, client: client) }
            inFlight[url] = task
        }
        let result = await task.value
        inFlight[url] = nil
        let data = try result.get()
        keep(data, at: url)
        return data
    }

    /// Drops everything kept.
    public func removeAll() {
        entries = [:]
        order = []
        bytes = 0
    }

    private static func fetch(_ url: URL, client: GatewayHTTPClient) async -> Result<Data, CheckoutError> {
        do {
            let response = try await client.send(TransportRequest(method: .get, url: url))
            guard (200..<300).contains(response.statusCode) else {
                return .failure(CheckoutError(.gatewayError, category: .unavailable, message: "the asset server answered HTTP \(response.statusCode)",
                                              gateway: client.gateway, gatewayCode: String(response.statusCode)))
            }
            return .success(response.body)
        } catch {
            return .failure(error)
        }
    }

    private func keep(_ data: Data, at url: URL) {
        guard entries[url] == nil else { return touch(url) }
        guard data.count <= maxBytes else { return }
        while bytes + data.count > maxBytes, let oldest = order.first {
            order.removeFirst()
            bytes -= entries.removeValue(forKey: oldest)?.count ?? 0
        }
        entries[url] = data
        order.append(url)
        bytes += data.count
    }

    private func touch(_ url: URL) {
        if let index = order.firstIndex(of: url) { order.remove(at: index) }
        order.append(url)
    }
}
