import Foundation

/// Markup the console sends. Built only by string interpolation, where every interpolated `String` (or number) is
/// escaped and only another `HTML` goes in as it is: a value that came from a customer, a merchant or a gateway
/// cannot become markup unless someone writes `HTML(unescaped:)`, which only this file's helpers do.
struct HTML: ExpressibleByStringInterpolation, Sendable {
    private(set) var text: String

    init(stringLiteral value: String) { text = value }
    init(stringInterpolation: StringInterpolation) { text = stringInterpolation.text }
    private init(unescaped: String) { text = unescaped }

    static let empty = HTML(unescaped: "")

    struct StringInterpolation: StringInterpolationProtocol {
        var text = ""
        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + interpolationCount * 16) }
        mutating func appendLiteral(_ literal: String) { text += literal }
        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        mutating func appendInterpolation(_ value: String?) { if let value { text += HTML.escape(value) } }
        mutating func appendInterpolation(_ value: some BinaryInteger) { text += String(value) }
        mutating func appendInterpolation(_ value: HTML) { text += value.text }
        mutating func appendInterpolation(_ values: [HTML]) { for value in values { text += value.text } }
        /// A URL in an attribute: built from a path and query pairs, each part percent-encoded, then escaped.
        mutating func appendInterpolation(href path: String, _ query: [(String, String?)] = []) {
            text += HTML.escape(HTML.url(path, query))
        }
    }

    /// `&`, `<`, `>`, `"` and `'` as character references: safe in text and in a double- or single-quoted attribute.
    static func escape(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for character in value.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// A console path with its query, each path segment and query part percent-encoded (absent values left out).
    static func url(_ path: String, _ query: [(String, String?)] = []) -> String {
        let segment = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encodedPath = path.split(separator: "/", omittingEmptySubsequences: false)
            .map { String($0).addingPercentEncoding(withAllowedCharacters: segment) ?? "" }.joined(separator: "/")
        let pairs = query.compactMap { name, value in
            value.map { "\(name)=\($0.addingPercentEncoding(withAllowedCharacters: segment) ?? "")" }
        }
        return pairs.isEmpty ? encodedPath : encodedPath + "?" + pairs.joined(separator: "&")
    }
}
