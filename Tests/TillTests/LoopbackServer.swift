import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal HTTP/1.1 server on 127.0.0.1 with an OS-assigned port, for transport tests: it reads
/// one request per connection and either answers with a canned response or holds the connection
/// open without answering (to provoke a client timeout).
final class LoopbackServer: @unchecked Sendable {
    enum Mode { case respond(status: Int, body: String), hang }

    let port: UInt16
    private let fd: Int32
    private let mode: Mode
    private let lock = NSLock()
    private var _received: [String] = []
    private var held: [Int32] = []

    var received: [String] { lock.lock(); defer { lock.unlock() }; return _received }

    init(mode: Mode) throws {
        self.mode = mode
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private func acceptLoop() {
        while true {
            let client = accept(fd, nil, nil)
            if client < 0 { return }
            var buffer = [UInt8](repeating: 0, count: 65536)
            let count = read(client, &buffer, buffer.count)
            let text = count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
            lock.lock(); _received.append(text); lock.unlock()
            switch mode {
            case .respond(let status, let body):
                let response = "HTTP/1.1 \(status) X\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
                _ = response.withCString { write(client, $0, strlen($0)) }
                close(client)
            case .hang:
                lock.lock(); held.append(client); lock.unlock()
            }
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        lock.lock(); held.forEach { close($0) }; held.removeAll(); lock.unlock()
    }

    /// A port on 127.0.0.1 that nothing listens on: bound, then closed.
    static func closedPort() throws -> UInt16 {
        let server = try LoopbackServer(mode: .hang)
        let port = server.port
        server.stop()
        return port
    }
}
