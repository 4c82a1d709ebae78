import Foundation

/// One merchant account the PayFort emulator knows: its credentials, SHA phrases and feedback URL.
///
/// The phrases are secrets; ``description`` and ``debugDescription`` leave them out, so a merchant
/// can be logged or printed by a failing test without leaking them.
public struct PayFortMerchant: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The `access_code` the merchant sends (up to 20 characters).
    public var accessCode: String
    /// The `merchant_identifier` the merchant sends (up to 20 characters).
    public var merchantIdentifier: String
    /// The SHA request phrase: requests from this merchant must be signed with it.
    public var requestPhrase: String
    /// The SHA response phrase: the emulator signs responses, redirects and notifications with it.
    public var responsePhrase: String
    /// `true` for SHA-512 signatures, `false` for SHA-256.
    public var sha512: Bool
    /// Where transaction feedback is POSTed; `nil` sends none.
    public var notificationURL: URL?
    /// How transaction feedback is encoded: a form post by default, JSON on request (APS support
    /// switches a channel to JSON).
    public var feedbackFormat: FeedbackFormat

    /// The body of transaction feedback.
    public enum FeedbackFormat: String, Sendable, Hashable, CaseIterable {
        /// `application/x-www-form-urlencoded`, every value text (the default submission type).
        case form
        /// `application/json`, an object of strings.
        case json
    }

    /// Creates a merchant account.
    /// - Parameters:
    ///   - accessCode: the `access_code` requests must carry.
    ///   - merchantIdentifier: the `merchant_identifier` requests must carry.
    ///   - requestPhrase: the SHA request phrase (verifies requests).
    ///   - responsePhrase: the SHA response phrase (signs responses and notifications).
    ///   - sha512: SHA-512 instead of SHA-256.
    ///   - notificationURL: the direct transaction feedback URL, if any.
    ///   - feedbackFormat: form post (default) or JSON.
    public init(accessCode: String, merchantIdentifier: String, requestPhrase: String, responsePhrase: String,
                sha512: Bool = false, notificationURL: URL? = nil, feedbackFormat: FeedbackFormat = .form) {
        self.accessCode = accessCode
        self.merchantIdentifier = merchantIdentifier
        self.requestPhrase = requestPhrase
        self.responsePhrase = responsePhrase
        self.sha512 = sha512
        self.notificationURL = notificationURL
        self.feedbackFormat = feedbackFormat
    }

    /// The signature algorithm this account is configured with.
    public var algorithm: PayFortEmulator.Signature.Algorithm { sha512 ? .sha512 : .sha256 }

    /// The merchant without its phrases.
    public var description: String {
        "PayFortMerchant(\(merchantIdentifier), access code \(accessCode), \(algorithm.rawValue), "
            + "notifications: \(notificationURL?.absoluteString ?? "none") (\(feedbackFormat.rawValue)))"
    }

    /// Same as ``description``: the phrases are never printed.
    public var debugDescription: String { description }
}
