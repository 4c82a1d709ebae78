/// Gateway-supplied text made fit for errors, outcomes and logs.
public enum GatewayText {
    /// A gateway's message made safe to keep: control characters (newlines and tabs included) and
    /// line or paragraph separators become spaces, card numbers are masked with
    /// `Redactor.maskCardNumbers(in:)`, and the result is cut to `limit` characters.
    ///
    /// Masking comes after the control characters are replaced, so a card number split by a line
    /// break is still caught, and before the cut, so a cut cannot leave more than the masked digits.
    /// - Parameters:
    ///   - text: the gateway's text; `nil` stays `nil`.
    ///   - limit: the most characters kept (grapheme clusters, as `String.count` counts them).
    public static func safe(_ text: String?, limit: Int = 150) -> String? {
        guard let text else { return nil }
        var flattened = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.properties.generalCategory {
            case .control, .lineSeparator, .paragraphSeparator: flattened.append(" ")
            default: flattened.append(scalar)
            }
        }
        let masked = Redactor.maskCardNumbers(in: String(flattened))
        return String(masked.prefix(max(0, limit)))
    }
}
