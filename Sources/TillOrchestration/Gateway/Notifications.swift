import Foundation
import Till

/// A notification as received over HTTP, before verification.
public struct IncomingNotification: Sendable, Hashable {
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: Data
    public var receivedAt: Date

    public init(headers: [String: String] = [:], body: Data, receivedAt: Date = Date()) {
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.body = body
        self.receivedAt = receivedAt
    }

    /// The media type of the body without parameters (`"application/json"`).
    public var mediaType: String? {
        headers["content-type"]?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }
}

/// A verified notification: the status it reports and how to acknowledge it.
public struct VerifiedNotification: Sendable, Hashable {
    public var report: StatusReport
    /// Sent back only after the report is durably stored.
    public var acknowledgement: NotificationAcknowledgement
    /// When true, a report that would change the attempt (a success, a decline, a refund) is stored but
    /// not applied: the server asks the gateway itself (``GatewayServerHalf/inquire(_:)``) and the
    /// inquiry's report decides. For gateways whose signed notifications a third party can re-cut or
    /// replay (the notification triggers, the inquiry decides).
    public var confirmBeforeApplying: Bool
    /// What the notification says about one operation (a capture, void or refund), when it is about one. The
    /// store settles the operation Till started that it names (by ``OperationReport/reference``, else the
    /// gateway's id for it, else the one open operation of its kind and amount) before ``report`` is applied, so
    /// a refund Till started and already counted is not counted twice; one it cannot match (made in the
    /// gateway's back office) is recorded through ``report`` as before.
    public var operation: OperationReport?

    public init(report: StatusReport, acknowledgement: NotificationAcknowledgement = .ok, confirmBeforeApplying: Bool = false,
                operation: OperationReport? = nil) {
        self.report = report
        self.acknowledgement = acknowledgement
        self.confirmBeforeApplying = confirmBeforeApplying
        self.operation = operation
    }
}

/// The HTTP answer a gateway expects for a notification it may stop retrying.
public struct NotificationAcknowledgement: Sendable, Hashable {
    public var statusCode: Int
    public var contentType: String
    public var body: Data

    public init(statusCode: Int = 200, contentType: String = "text/plain", body: Data = Data("OK".utf8)) {
        self.statusCode = statusCode
        self.contentType = contentType
        self.body = body
    }

    /// `200 OK`, text/plain.
    public static let ok = NotificationAcknowledgement()
}
