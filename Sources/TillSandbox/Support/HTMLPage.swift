import Hummingbird
import Till

/// The sandbox's small HTML pages (3-D Secure, H5 payment pages).
enum SandboxHTML {
    /// A whole page: `title` as heading, `body` as given (already escaped), and which emulator made it.
    static func page(title: String, body: String, emulator: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
        <title>\(escape(title))</title></head>
        <body><h1>\(escape(title))</h1>
        \(body)
        <p><small>Till sandbox: \(escape(emulator)) emulator</small></p>
        </body></html>
        """
    }

    /// `text` safe inside HTML text and attribute values.
    static func escape(_ text: String) -> String { FormPost.escapeHTML(text) }
}

/// What the emulator's customer-facing pages answer (the merchant page, 3-D Secure).
enum PageAnswer: Sendable, Equatable {
    /// An HTML page.
    case page(status: Int, html: String)
    /// `302 Found` to `location`.
    case redirect(location: String)
}

extension PageAnswer {
    /// The HTTP answer: the page as `text/html`, or `302 Found`.
    var response: Response {
        switch self {
        case .page(let status, let html):
            Sandbox.text(html, status: .init(code: status), contentType: "text/html; charset=utf-8")
        case .redirect(let location):
            Response(status: .found, headers: [.location: location])
        }
    }
}
