import Foundation

/// A form the customer's device posts straight to a gateway (`application/x-www-form-urlencoded`):
/// the gateway's signed hidden fields and what the customer typed, in order. Its description names the
/// fields only, because the values include card data.
public struct FormPost: Sendable, Hashable, Codable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// One field of the form, posted as `name=value`.
    public struct Field: Sendable, Hashable, Codable {
        public var name: String
        public var value: String
        public init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Where the form goes (the gateway's page).
    public var url: URL
    /// The fields, in the order they are posted.
    public var fields: [Field]

    public init(url: URL, fields: [Field]) {
        self.url = url
        self.fields = fields
    }

    /// The value of the first field called `name`.
    public subscript(name: String) -> String? { fields.first { $0.name == name }?.value }

    /// The body a browser posts: `name=value` pairs joined by `&`, each part percent-encoded (spaces as `+`).
    public var encodedBody: Data {
        Data(fields.map { Self.encode($0.name) + "=" + Self.encode($0.value) }.joined(separator: "&").utf8)
    }

    /// A complete HTML page that posts the form as soon as a web view loads it, for presenters that post
    /// through a web view. Every name and value is HTML-escaped.
    public func autoSubmittingHTML() -> String {
        let inputs = fields.map { "<input type=\"hidden\" name=\"\(Self.escapeHTML($0.name))\" value=\"\(Self.escapeHTML($0.value))\">" }
        return "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"></head>"
            + "<body onload=\"document.forms[0].submit()\"><form method=\"post\" action=\"\(Self.escapeHTML(url.absoluteString))\" accept-charset=\"utf-8\">\n"
            + inputs.joined(separator: "\n")
            + "\n<noscript><button type=\"submit\">Continue</button></noscript></form></body></html>\n"
    }

    public var description: String { "FormPost(\(url.host ?? "?"): \(fields.map(\.name).joined(separator: ", ")))" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["url": url, "fields": fields.map(\.name)]) }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._* ")

    private static func encode(_ text: String) -> String {
        (text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? "").replacingOccurrences(of: " ", with: "+")
    }

    /// `text` safe inside HTML text and attribute values (`& < > " '` as entities).
    package static func escapeHTML(_ text: String) -> String {
        var out = ""
        for ch in text {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(ch)
            }
        }
        return out
    }
}
