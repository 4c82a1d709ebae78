import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import TillServer
import TillService

/// A raw TCP connection to the server, for clients no HTTP library would play: silent, or trickling a
/// request a byte at a time.
final class RawConnection: @unchecked Sendable {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { close(fd); throw POSIXError(.ECONNREFUSED) }
        var timeout = timeval(tv_sec: 0, tv_usec: 20_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Sends bytes; false once the server has closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// True once the server has closed its side (a read returns end of stream or a reset).
    var closedByServer: Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
            // Bytes (an error answer): keep reading until the close or the timeout.
        }
    }
}

@Suite("Slow and idle clients cannot hold the server")
struct SlowClientTests {
    @Test("idle connections and requests trickled a byte at a time are closed; the server still answers")
    func slowClientsDropped() async throws {
        let server = try await ServerHarness(.sqlite) { settings in
            settings.idleTimeoutSeconds = 0.5
            settings.requestReadTimeoutSeconds = 1
        }
        let port = server.baseURL.port!
        let idle = try (0..<20).map { _ in try RawConnection(port: port) }
        let halfSent = try (0..<20).map { _ in try RawConnection(port: port) }
        for connection in halfSent { connection.send("POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 60000\r\n\r\n{") }
        let trickling = try (0..<20).map { _ in try RawConnection(port: port) }
        let request = Array("POST /v1/payments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + String(repeating: "a", count: 200))
        // A byte every 100 ms: never idle for the idle timeout, but the request never completes.
        for index in 0..<30 {
            for connection in trickling { connection.send(String(request[index % request.count])) }
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .milliseconds(300))
        #expect(idle.filter(\.closedByServer).count == idle.count)
        #expect(halfSent.filter(\.closedByServer).count == halfSent.count)
        #expect(trickling.filter(\.closedByServer).count == trickling.count)
        #expect(try await server.send("GET", "healthz").status == 200)
        await server.stop()
    }

    @Test("a connection limit: connections past it wait, and are served once slow ones are dropped")
    func connectionLimit() async throws {
        let server = try await ServerHarness(.sqlite) { settings in
            settings.maxConnections = 4
            settings.idleTimeoutSeconds = 0.5
            settings.requestReadTimeoutSeconds = 0.5
        }
        let port = server.baseURL.port!
        let hogs = try (0..<4).map { _ in try RawConnection(port: port) }
        try await Task.sleep(for: .milliseconds(100))
        let started = ContinuousClock.now
        #expect(try await server.send("GET", "healthz").status == 200)
        // Served only after the hogs were dropped.
        #expect(ContinuousClock.now - started >= .milliseconds(200))
        #expect(hogs.filter(\.closedByServer).count == hogs.count)
        await server.stop()
    }

    @Test("the limits are configuration, validated with the field named")
    func limitsValidated() {
        var settings = ServerSettings()
        settings.idleTimeoutSeconds = 0
        settings.maxConnections = 0
        let fields = settings.validate(path: "server").map(\.field)
        #expect(fields.contains("server.idleTimeoutSeconds") && fields.contains("server.maxConnections"))
    }
}
