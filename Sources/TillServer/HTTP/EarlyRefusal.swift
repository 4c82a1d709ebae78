import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HTTPTypes
import NIOCore
import NIOHTTPTypes
import TillService

/// Refuses, on the connection's own event loop, a request whose credential's bucket is already empty — an API key, a
/// client secret's payment, or the address's failed authentications (``API/admit(authorization:peerIP:now:)``, the
/// same rule ``API/authenticate(_:_:)`` follows) — before it becomes a task, is routed, logged, or has its answer
/// encoded. A flood from one exhausted credential then costs the server little more than reading it, and the
/// payments of everyone else keep their cores.
///
/// - The answer is the one the API gives for the same refusal: `429` with the `rate_limited` body, `Retry-After`, an
///   `X-Request-Id` (echoed, as ``RequestIDMiddleware`` does) and `nosniff`; `till_rate_limited_total{limit}` counts it.
///   It is not logged line by line: the counter is the record of a flood.
/// - Only routes that authenticate (``API/authenticates(path:)``), never a gateway's notification; never `HEAD`.
/// - Only when no earlier request of the connection is still being answered: HTTP/1.1 answers in order, so a request
///   pipelined behind one in progress goes the usual way (and is refused there).
/// - A refused request's body is read and dropped; the connection stays open for the next request unless the request
///   asked for `Connection: close`.
final class EarlyRefusal: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let api: API
    /// `Server`, as the application's answers name it.
    private let serverName: String?
    /// Requests passed on whose answer has not ended.
    private var inFlight = 0
    /// The request being read asked to close the connection.
    private var currentCloses = false
    /// A request asked to close the connection and has been read whole: nothing after it is read as a request.
    private var closing = false
    /// Answers written and not yet flushed (flushed once per read, not once per answer).
    private var unflushed = false
    /// A read held back while the connection cannot take more writes: a client that sends refused requests without
    /// reading their answers stops being read, instead of having its answers queue in memory.
    private var readHeld = false
    /// `Date`, made at most once a second.
    private var date: (second: Int, text: String) = (0, "")
    /// The answer to the request being refused, sent once its end arrives.
    private var refusing: (head: HTTPResponse, body: ByteBuffer, close: Bool)?
    /// The last refusal's body, by its message: a flood asks for the same one again and again.
    private var lastBody: (message: String, bytes: ByteBuffer)?

    init(api: API, serverName: String?) {
        self.api = api
        self.serverName = serverName
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if closing { return }
        switch unwrapInboundIn(data) {
        case .head(let request):
            currentCloses = request.headerFields[.connection].map { $0.lowercased().contains("close") } ?? false
            if inFlight == 0, let answer = refusal(of: request, peerIP: context.channel.remoteAddress?.ipAddress) {
                refusing = answer
                return
            }
            inFlight += 1
            context.fireChannelRead(data)
        case .body:
            if refusing == nil { context.fireChannelRead(data) }
        case .end:
            if currentCloses { closing = true }
            guard let answer = refusing else {
                context.fireChannelRead(data)
                return
            }
            refusing = nil
            context.write(wrapOutboundOut(.head(answer.head)), promise: nil)
            context.write(wrapOutboundOut(.body(answer.body)), promise: nil)
            if answer.close {
                // The output half closed once the answer is out: the client reads it whole, and no reset is sent over it.
                let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                    loopBound.value.close(mode: .output).whenFailure { _ in loopBound.value.close(promise: nil) }
                }
            } else {
                context.write(wrapOutboundOut(.end(nil)), promise: nil)
                unflushed = true
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            context.read()
        } else {
            readHeld = true
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable && readHeld {
            readHeld = false
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { inFlight = max(0, inFlight - 1) }
        context.write(data, promise: promise)
    }

    /// An HTTP date (RFC 9110 IMF-fixdate), `Sun, 06 Nov 1994 08:49:37 GMT`, of a time in whole seconds since 1970.
    static func httpDate(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(1900 + Int(parts.tm_year)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// The answer that refuses `request`, or nil to pass it on.
    private func refusal(of request: HTTPRequest, peerIP: String?) -> (head: HTTPResponse, body: ByteBuffer, close: Bool)? {
        // Not HEAD (answered without a body) nor a request that waits for `100 Continue`: those go the usual way.
        guard request.method != .head, request.headerFields[.expect] == nil, let path = request.path, API.authenticates(path: path),
              case .refused(let limit, let error, _) = api.admit(authorization: request.headerFields[.authorization], peerIP: peerIP,
                                                              now: TokenBuckets.monotonicSeconds())
        else { return nil }
        api.limits.refused(limit)
        let body: ByteBuffer
        if let last = lastBody, last.message == error.message {
            body = last.bytes
        } else {
            guard let bytes = try? API.jsonBytes(API.errorBody(error)) else { return nil }
            body = ByteBuffer(bytes: bytes)
            lastBody = (error.message, body)
        }
        let close = currentCloses
        var head = HTTPResponse(status: error.status)
        let now = Int(Date().timeIntervalSince1970)
        if date.second != now { date = (now, Self.httpDate(now)) }
        head.headerFields[.date] = date.text
        head.headerFields[.server] = serverName
        head.headerFields[.contentType] = "application/json"
        head.headerFields[.contentLength] = String(body.readableBytes)
        head.headerFields[.retryAfter] = error.retryAfterSeconds.map(String.init)
        head.headerFields[.requestID] = requestID(given: request.headerFields[.requestID])
        head.headerFields[.contentTypeOptions] = "nosniff"
        if close { head.headerFields[.connection] = "close" }
        return (head, body, close)
    }
}
