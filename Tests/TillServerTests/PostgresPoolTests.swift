import Foundation
import Testing
@testable import TillServer

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

    @Test("the storage URL: TCP, or a Unix-domain socket by libpq's host=/directory; other parameters are refused, not ignored",
          arguments: [
              ("postgres://till:till@127.0.0.1:5432/till", true),
              ("postgresql://till@db.internal/till", true),
              ("postgres://till:till@/till?host=/run/postgresql", true),
              ("postgres://till:till@127.0.0.1/till?sslmode=disable", true),
              ("postgres://till:till@127.0.0.1/till?sslmode=require", false),
              ("postgres://till:till@127.0.0.1/till?application_name=x", false),
              ("postgres://till:till@/till", false),
              ("postgres://till:till@/till?host=relative", false),
              ("postgres://127.0.0.1/till", false),
              ("mysql://till:till@127.0.0.1/till", false),
          ])
    func urls(url: String, accepted: Bool) async throws {
        if accepted {
            // Nothing connects until the first query.
            let store = try PostgresPaymentStore(url: url)
            try await store.close()
        } else {
            #expect(throws: StoreError.self) { try PostgresPaymentStore(url: url) }
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
