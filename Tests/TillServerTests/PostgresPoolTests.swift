import Foundation
import Testing
@testable import TillServer
import TillService

/// The PostgreSQL connection settings: `server.postgresConnections`, validated like every other setting and
/// really the pool's bound, and the storage URL's forms.
@Suite("PostgreSQL connection settings")
struct PostgresPoolTests {
    @Test("postgresConnections defaults to the measured size and is refused outside 1 to 1000, with the field named")
    func validated() throws {
        #expect(ServerSettings().postgresConnections == ServerSettings.defaultPostgresConnections)
        let decoded = try JSONDecoder().decode(ServerSettings.self, from: Data(#"{"postgresConnections": 3}"#.utf8))
        #expect(decoded.postgresConnections == 3)
        #expect(decoded.validate(path: "server").isEmpty)
        for bad in [0, -1, 1_001] {
            var settings = ServerSettings()
            settings.postgresConnections = bad
            #expect(settings.validate(path: "server").map(\.field) == ["server.postgresConnections"], "\(bad)")
        }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ServerSettings.self, from: Data(#"{"postgresConnections": "eight"}"#.utf8))
        }
    }

    @Test("a store opened with 3 connections never holds more than 3, however many requests wait")
    func bounded() async throws {
        guard let url = StoreKind.postgresURL else {
            FileHandle.standardError.write(Data("note: TILL_TEST_POSTGRES_URL is not set; the pool-size test is skipped\n".utf8))
            return
        }
        let store = try PostgresPaymentStore(url: url, connections: 3)
        defer { Task { try? await store.close() } }
        let backends = try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<24 { group.addTask { try await store.backendProcessID(holding: .milliseconds(40)) } }
            return try await group.reduce(into: Set<Int32>()) { $0.insert($1) }
        }
        #expect(backends.count <= 3, "\(backends)")
        #expect(backends.count >= 2, "24 concurrent calls ran on \(backends.count) connection(s)")
        #expect(throws: StoreError.self) { try PostgresPaymentStore(url: url, connections: 0) }
    }

    @Test("the storage URL: TCP, or a Unix-domain socket by libpq's host=/directory or an encoded host; other parameters are refused, not ignored",
          arguments: [
              ("postgres://till:secret@127.0.0.1:5432/till", PostgresEndpoint.Address.tcp(host: "127.0.0.1", port: 5432)),
              ("postgresql://till@db.internal/till", .tcp(host: "db.internal", port: 5432)),
              ("postgres://till:secret@[::1]:6432/till", .tcp(host: "::1", port: 6432)),
              ("postgres://till:secret@/till?host=/run/postgresql", .socket(path: "/run/postgresql/.s.PGSQL.5432")),
              ("postgres://till:secret@:6432/till?host=/tmp/", .socket(path: "/tmp/.s.PGSQL.6432")),
              ("postgres://till@%2Frun%2Fpostgresql/till", .socket(path: "/run/postgresql/.s.PGSQL.5432")),
              ("postgres://till:secret@127.0.0.1/till?sslmode=disable", .tcp(host: "127.0.0.1", port: 5432)),
              ("postgres://till:secret@127.0.0.1/till?sslmode=require", nil),
              ("postgres://till:secret@127.0.0.1/till?application_name=x", nil),
              ("postgres://till:secret@remote.example/till?host=/tmp", nil),
              ("postgres://till:secret@/till", nil),
              ("postgres://till:secret@/till?host=relative", nil),
              ("postgres://127.0.0.1/till", nil),
              ("mysql://till:secret@127.0.0.1/till", nil),
          ] as [(String, PostgresEndpoint.Address?)])
    func urls(url: String, address: PostgresEndpoint.Address?) async throws {
        switch PostgresEndpoint.read(url) {
        case .success(let endpoint):
            #expect(endpoint.address == address, "\(url)")
            // Nothing connects until the first query.
            let store = try PostgresPaymentStore(url: url)
            try await store.close()
        case .failure(let problem):
            #expect(address == nil, "\(url): \(problem.message)")
            #expect(!problem.message.contains("secret"), "the message must not carry the password")
            #expect(throws: StoreError.self) { try PostgresPaymentStore(url: url) }
            // Refused at configuration time too, naming the field.
            let settings = ServerSettings(storage: url)
            #expect(settings.validate(path: "server").map(\.field) == ["server.storage"], "\(url)")
        }
    }

    @Test("the store works over the Unix-domain socket of the test database")
    func unixSocket() async throws {
        guard let url = StoreKind.postgresURL, let tcp = URLComponents(string: url) else {
            FileHandle.standardError.write(Data("note: TILL_TEST_POSTGRES_URL is not set; the Unix-socket test is skipped\n".utf8))
            return
        }
        // .ci/postgres.sh puts the socket in /tmp.
        let port = tcp.port ?? 5432
        guard FileManager.default.fileExists(atPath: "/tmp/.s.PGSQL.\(port)") else {
            FileHandle.standardError.write(Data("note: no PostgreSQL socket in /tmp for port \(port); the Unix-socket test is skipped\n".utf8))
            return
        }
        var socket = tcp
        socket.host = nil
        socket.queryItems = [URLQueryItem(name: "host", value: "/tmp")]
        let store = try PostgresPaymentStore(url: try #require(socket.string), connections: 2)
        try await store.migrate()
        #expect(try await store.backendProcessID(holding: .zero) > 0)
        try await store.close()
    }
}
