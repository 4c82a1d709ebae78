import Foundation
import Logging

/// A swift-log handler that writes one JSON object per line — `time` (ISO 8601 with milliseconds, UTC), `level`,
/// `label`, `message`, `source` and the merged metadata (`metadata`, values as strings, nested ones as objects or
/// arrays) — for log collectors that read JSON lines (`till server --log-format json`).
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable (Data) -> Void

    /// - Parameters:
    ///   - level: the lowest level written.
    ///   - write: where each line goes (standard error by default, a failed write ignored: a reader that went away
    ///     or a full disk must not stop the server), the newline included.
    public init(label: String, level: Logger.Level = .info, metadataProvider: Logger.MetadataProvider? = nil,
                write: @escaping @Sendable (Data) -> Void = { try? FileHandle.standardError.write(contentsOf: $0) }) {
        self.label = label
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        write(level: event.level, message: event.message, metadata: event.metadata, source: event.source)
    }

    private func write(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit { merged.merge(explicit) { _, new in new } }
        var object: [String: Any] = ["time": Self.timestamp(Date()), "level": level.rawValue, "label": label,
                                     "message": message.description, "source": source]
        if !merged.isEmpty { object["metadata"] = merged.mapValues(Self.json) }
        guard var data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        data.append(UInt8(ascii: "\n"))
        write(data)
    }

    static func json(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let values): values.map(json)
        case .dictionary(let values): values.mapValues(json)
        }
    }

    static func timestamp(_ date: Date) -> String {
        var style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        style.timeZone = TimeZone(identifier: "UTC")!
        return date.formatted(style)
    }
}
