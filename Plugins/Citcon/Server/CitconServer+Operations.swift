import Foundation
import TillCitcon
import TillGatewayKit
import TillOrchestration

/// Refunds through the service's operations, and what a refund IPN says about one.
///
/// Only refunds are offered (`docs/gateways/citcon.md`, "Operations"):
/// - **refund**: `POST /v1/refunds` `{id, reference, amount, note}` (the sandbox recording,
///   lorismaz/citcon_pay@f232f7a `spec/fixtures/vcr_cassettes/refund/create_full_refund_success.yml`), answered
///   at once with `status: "succeeded"`, the refund's own `id` and `amount` (this refund) beside
///   `amount_refunded` (the charge's total);
/// - **capture**: no source shows a `POST /v1/captures` body or answer (`Fixtures/wire/capture-request.json`):
///   refused before anything is sent;
/// - **void**: `POST /v1/cancels` was recorded only for charges never paid (`initiated`); no source shows a
///   cancel releasing an authorization, nor its refusal of a paid charge: refused before anything is sent.
extension CitconServer {
    /// Refunds, partial and several: the request carries its own `amount` (the recording), Citcon keeps the
    /// charge's "total amount refunded" `amount_refunded` (the IPN document) and the inquiry lists the charge's
    /// `refunds` (the iOS guide; the Android SDK's `ResponsdInquire.kt`), and Citcon's own WooCommerce plugin
    /// refunds whatever amount the merchant enters, each refund on its own (Citcon/woocommerce-gateway-citcon@a967e5a
    /// `process_refund`, for Citcon's older CHOP API). No source gives a refund window.
    public var operationCapabilities: OperationCapabilities {
        OperationCapabilities(refund: .init(partial: true, multiple: true))
    }

    /// Sends one refund: `POST /v1/refunds` with the charge's id (the attempt's gateway reference), the
    /// operation's reference as the refund's own `reference`, and the amount. Citcon answers at once: `succeeded`
    /// with the refund's id and its own `amount`; `4202` (HTTP 406, "refund failed") is `failed`.
    /// - Throws: ``CheckoutError`` `unsupported` for a capture or a void, before anything is sent; `unknownOutcome`
    ///   when the charge id is unknown to Till, for a lost or unreadable answer, and when Citcon says it already
    ///   has this reference (a refund by this reference may exist: the inquiry settles it).
    public func perform(_ request: OperationRequest) async throws -> OperationReport {
        guard request.kind == .refund else {
            throw CheckoutError.unsupportedOperation(request.kind, gateway: gateway, why: request.kind == .capture
                ? "no Citcon source shows a capture request (POST /v1/captures has no documented body or answer)"
                : "no Citcon source shows a cancel releasing an authorization (POST /v1/cancels was recorded only for unpaid charges)")
        }
        guard let chargeID = request.gatewayReference, !chargeID.isEmpty else {
            throw CheckoutError(.missingField, category: .invalidInput, field: "gatewayReference",
                                message: "a refund names the Citcon charge; the attempt has no charge id", gateway: gateway)
        }
        let answer: CitconOperation
        do {
            answer = try await refund(transactionID: chargeID, reference: request.reference.rawValue, amount: request.amount,
                                      note: "Refund \(request.reference.rawValue)")
        } catch let error as CheckoutError where error.field == "citcon.transaction.reference" {
            throw CheckoutError(.unknownOutcome, category: .unknownOutcome, field: "reference",
                                message: "Citcon already has a request with reference \(request.reference.rawValue)", gateway: gateway,
                                gatewayCode: error.gatewayCode, gatewayMessage: error.gatewayMessage)
        } catch let error as CheckoutError where [.declinedHard, .declinedSoft, .invalidInput].contains(error.category) {
            return OperationReport(reference: request.reference, kind: .refund, status: .failed, amount: request.amount,
                                   gatewayCode: error.gatewayCode, gatewayMessage: error.gatewayMessage ?? error.message)
        }
        return try report(ofRefund: answer, for: request)
    }

    /// The report of Citcon's refund answer: `succeeded` → succeeded, a failure word → failed, anything else
    /// pending (no other refund status was ever seen). The amount is the answer's own `amount` (this refund; never
    /// `amount_refunded`, the total), else the request's.
    func report(ofRefund answer: CitconOperation, for request: OperationRequest) throws -> OperationReport {
        if let echoed = answer.reference, echoed != request.reference.rawValue {
            throw CheckoutError(.invalidField, category: .unknownOutcome, field: "data.reference",
                                message: "Citcon's answer names another refund", gateway: gateway)
        }
        let currency = answer.currency.flatMap(Currency.lookup) ?? request.amount.currency
        let amount = answer.amount.map { Money(minorUnits: $0, currency: currency) } ?? request.amount
        let raw = answer.status ?? ""
        let status: OperationStatus = switch CitconGateway.status(raw) {
        case .paid: .succeeded
        case .failed, .cancelled, .expired: .failed
        default: .pending
        }
        return OperationReport(reference: request.reference, kind: .refund, status: status, amount: amount,
                               gatewayReference: answer.id, gatewayStatus: raw.isEmpty ? nil : raw)
    }

    /// Asks about one refund with the charge's inquiry (`GET /v1/transactions/{id}`): no source shows a refund
    /// read by its own id, nor an element of the charge's `refunds.data[]`, so only the charge's running total
    /// `amount_refunded` ("Amount refunded in cents", the iOS guide) can tell. With the other refunds Till counts
    /// as succeeded (``OperationRequest/succeededBefore``) the total says:
    /// - exactly this refund's amount more: succeeded;
    /// - nothing more: failed (Citcon answers a refund at once, `succeeded`, and a refund made later still reaches
    ///   Till as a refund IPN, recorded as one made outside Till);
    /// - anything else, or another refund still open (``OperationRequest/othersOpen``), or no total: unknown.
    public func inquireOperation(_ request: OperationRequest) async throws -> OperationReport {
        guard request.kind == .refund else { return try await unsupportedInquiry(request) }
        let unknown = OperationReport(reference: request.reference, kind: .refund, status: .unknown,
                                      gatewayReference: request.operationGatewayReference)
        guard let chargeID = request.gatewayReference, !chargeID.isEmpty else { return unknown }
        let charge = try await transaction(chargeID)
        guard charge.reference == nil || charge.reference == request.attempt.rawValue else {
            throw CheckoutError(.unknownOutcome, message: "Citcon's transaction \(charge.id) belongs to another order", gateway: gateway)
        }
        guard !request.othersOpen else { return unknown }
        let before = request.succeededBefore?.minorUnits ?? 0
        let total = charge.amountRefunded ?? 0
        if charge.currency.flatMap(Currency.lookup).map({ $0 != request.amount.currency }) == true { return unknown }
        switch total - before {
        case request.amount.minorUnits:
            var report = unknown
            report.status = .succeeded
            report.amount = request.amount
            report.gatewayStatus = charge.status
            return report
        case 0:
            var report = unknown
            report.status = .failed
            report.gatewayStatus = charge.status
            report.gatewayMessage = "the charge's amount_refunded does not include this refund"
            return report
        default:
            return unknown
        }
    }

    /// The protocol's default refusal of an inquiry (no inquiry of a capture or void: they are never sent).
    private func unsupportedInquiry(_ request: OperationRequest) async throws -> OperationReport {
        throw CheckoutError.unsupportedOperation(request.kind, aspect: "inquiry", gateway: gateway,
                                                 why: "gateway \(gateway) offers no inquiry of a \(request.kind)")
    }

    /// What a verified refund IPN says about the refund it is about: Till's refund when its signed `reference`
    /// is one of Till's operation references (`<attempt>-r<n>`), else none of Till's (a refund made in Citcon's
    /// portal, or an IPN naming the charge); its `id` as the gateway's (the refund's own id when the IPN names the
    /// refund; the charge's matches no refund Till holds); `success` succeeded, `fail` failed (the IPN document's
    /// refund statuses). No amount: the IPN document does not say whose `amount` is.
    static func operation(ofRefundIPN reference: String?, id: String?, status raw: String) -> OperationReport {
        let status: OperationStatus = switch CitconGateway.status(raw) {
        case .paid: .succeeded
        case .failed, .cancelled, .expired: .failed
        default: .pending
        }
        let own = reference.flatMap(OperationReference.init(rawValue:)).flatMap { $0.kind == .refund ? $0 : nil }
        return OperationReport(reference: own, kind: .refund, status: status, gatewayReference: id,
                               gatewayStatus: raw.isEmpty ? nil : raw)
    }
}
