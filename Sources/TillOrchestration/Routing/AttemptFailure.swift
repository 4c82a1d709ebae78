import Foundation
import Till

/// What a failed gateway call (a Prepare or a Submit) means for the money: the one classification
/// the merchant server, the app and the tests share.
///
/// | class | when | what follows |
/// |---|---|---|
/// | ``neverSent`` | the request provably never reached the gateway, or was refused before it could act (unavailable, configuration, unsupported) | the attempt is closed as failed; the next gateway may be tried |
/// | ``declined(code:)`` | the gateway answered with a definite refusal (a decline, invalid input, a cancel) | the attempt is closed as failed with the gateway's code; the decision table decides whether to cascade |
/// | ``unknown`` | anything else (a timeout, a lost answer, an unreadable answer) | the attempt stays open for an inquiry; never cascaded |
public enum AttemptFailure: Sendable, Hashable {
    case neverSent
    /// Refused before anything was sent because of the payment's or the app's own input (a field the gateway
    /// needs): a mistake to fix, not a try. The attempt policy does not count it (``AttemptPolicy``).
    case inputRefused
    case declined(code: String)
    case unknown

    /// The code recorded on an attempt that was closed because its request never reached the gateway.
    public static let notSentCode = "till_not_sent"
    /// The code recorded on an attempt refused before anything was sent because of its own input.
    public static let inputRefusedCode = "till_input_refused"

    /// Classifies `error`.
    public init(_ error: CheckoutError) {
        switch error.category {
        case .unavailable, .configuration, .unsupported:
            self = .neverSent
        case .declinedHard, .declinedSoft, .cancelled, .invalidInput:
            // An answer that could not be read says nothing definite, even with an input-like code.
            self = error.code == .malformedBody ? .unknown : .declined(code: error.gatewayCode ?? error.code.rawValue)
        case .unknownOutcome, .verification:
            self = .unknown
        }
    }

    /// The code to record on the closed attempt, or nil when the attempt stays open.
    public var recordedCode: String? {
        switch self {
        case .neverSent: Self.notSentCode
        case .inputRefused: Self.inputRefusedCode
        case .declined(let code): code
        case .unknown: nil
        }
    }
}
