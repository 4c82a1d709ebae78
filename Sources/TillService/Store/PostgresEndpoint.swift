import Foundation

/// Where a PostgreSQL URL points, and as whom.
public struct PostgresEndpoint: Sendable, Equatable {
    public enum Address: Sendable, Equatable {
        /// A host name or IP address (IPv6 without its brackets) and a port.
        case tcp(host: String, port: Int)
        /// The path of a Unix-domain socket: `<directory>/.s.PGSQL.<port>`.
        case socket(path: String)
    }
    public var address: Address
    public var user: String
    public var password: String?
    public var database: String?
}

/// Why a PostgreSQL URL cannot be used (never containing the URL, which may hold a password).
public struct PostgresURLProblem: Error, Sendable, Equatable {
    public var message: String
}

extension PostgresEndpoint {
    /// Reads a storage URL:
    ///
    /// - `postgres://user:password@host:port/database` connects over TCP (`[::1]` for IPv6);
    /// - `postgres://user:password@/database?host=/run/postgresql`, libpq's spelling, or the same directory
    ///   percent-encoded as the host (`postgres://user@%2Frun%2Fpostgresql/database`), connects over the
    ///   Unix-domain socket `/run/postgresql/.s.PGSQL.<port>`, for a database on the same machine.
    ///
    /// Any other query parameter is refused rather than ignored (an `sslmode=require` that silently did
    /// nothing would be worse than an error); `sslmode=disable` is accepted, as it is what happens. A
    /// host and a `host=` parameter together are refused: which one wins would be a guess.
    public static func read(_ url: String) -> Result<PostgresEndpoint, PostgresURLProblem> {
        let expected = "expected postgres://user:password@host:port/database or postgres://user:password@/database?host=/socket/directory"
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
              let user = components.user, !user.isEmpty else {
            return .failure(PostgresURLProblem(message: expected))
        }
        let host = components.host ?? ""
        var socketDirectory: String? = host.hasPrefix("/") ? host : nil
        for item in components.queryItems ?? [] {
            switch (item.name, item.value) {
            case ("host", let value?) where value.hasPrefix("/"):
                guard host.isEmpty else {
                    return .failure(PostgresURLProblem(message: "a host and a host= socket directory together in the PostgreSQL URL (\(expected))"))
                }
                socketDirectory = value
            case ("sslmode", "disable"):
                continue
            default:
                return .failure(PostgresURLProblem(message: "unsupported parameter \(item.name) in the PostgreSQL URL (\(expected))"))
            }
        }
        let port = components.port ?? 5432
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let address: Address
        if let socketDirectory {
            let directory = socketDirectory.hasSuffix("/") ? String(socketDirectory.dropLast()) : socketDirectory
            address = .socket(path: "\(directory)/.s.PGSQL.\(port)")
        } else {
            var name = host
            if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
            guard !name.isEmpty else { return .failure(PostgresURLProblem(message: expected)) }
            address = .tcp(host: name, port: port)
        }
        return .success(PostgresEndpoint(address: address, user: user, password: components.password,
                                 database: database.isEmpty ? nil : database))
    }
}
