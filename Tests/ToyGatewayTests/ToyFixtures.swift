// Toy Pay's vendor material: its API document and its published signature examples. Both the module
// (ToyGateway.swift, ToyWire.swift, ToyServer.swift, ToyPlugin.swift) and the emulator
// (ToyEmulator.swift) were written from this, and from nothing else of each other.
//
// In a gateway's own test target these would be files under `Fixtures/` with a README naming their
// source; here they are kept as Swift, so that one file shows the whole vendor document.
//
// ---------------------------------------------------------------------------------------------------
// Toy Pay API v1
//
// Base URL: https://api.toypay.example/toy (production). A sandbox serves it at {sandbox}/toy.
//
// Every request carries two headers:
//   Toy-Key: the account's key id
//   Toy-Signature: lower-case hex HMAC-SHA256, keyed with the account's secret key, of
//                  METHOD "\n" PATH "\n" BODY
// PATH is the URL path as sent (`/toy/v1/orders`); BODY is the body's bytes, empty for GET.
//
// POST {base}/v1/orders, JSON:
//   reference   string, 1 to 64 characters, unique per account: the merchant's order reference
//   amount      integer, minor units, positive
//   currency    ISO 4217 code
//   return_url  where the payment page sends the customer back
//   notify_url  optional; where notifications go (else the account's webhook URL)
// 201: the order. Errors: {"error": {"code": "...", "message": "..."}}
//   400 invalid_request (message starts with the field), 401 unknown_key or bad_signature,
//   409 duplicate_reference, 503 unavailable: the request was not processed; it is safe to send again.
//
// GET {base}/v1/orders/{reference}: 200 the order, 404 not_found.
//
// An order: {"order": "ord_…", "reference", "amount", "currency", "status", "pay_url"}.
// Statuses: open, paid, declined, cancelled.
//
// The payment page is pay_url (GET shows it; POST with the form field choice=pay|decline|cancel
// completes it). It answers 303 to return_url with `toy_order` and `toy_result` (paid, declined,
// cancelled) added to the query.
//
// Notifications: when an order leaves `open`, Toy Pay POSTs JSON to notify_url (or the webhook URL):
//   {"amount", "currency", "event", "order", "reference", "status"}
// with the header Toy-Signature: lower-case hex HMAC-SHA256, keyed with the secret key, of the body
// alone. Any 2xx acknowledges it. `event` is the same for every delivery of one event.
// ---------------------------------------------------------------------------------------------------

/// Toy Pay's published signature examples.
enum ToyVectors {
    static let secret = "toy_sk_test_4f1c9b"

    static let requestMethod = "POST"
    static let requestPath = "/toy/v1/orders"
    static let requestBody = #"{"amount":2500,"currency":"USD","reference":"ref-0001","return_url":"shop://till/return?till_state=abc"}"#
    static let requestStringToSign = "POST\n/toy/v1/orders\n" + requestBody
    static let requestSignature = "ea8deb195ba1a063a2ee6cfc4ecf547ae2ab558c4f1f68d40c8f9f91b8cc660d"

    static let notificationBody = #"{"amount":2500,"currency":"USD","event":"evt_ord_1_paid","order":"ord_1","reference":"ref-0001","status":"paid"}"#
    static let notificationSignature = "573351d2a8e21cd5738186c7d41282ef162ef30b47132446e418fc250d2a76d6"
}
